import { describe, expect, it } from 'vitest';
import {
  ArgumentError,
  ClientClosedError,
  GENERIC_SERVER_DETAIL,
  ProblemError,
  renderProblem,
  UnauthorizedError,
  ValidationProblem,
} from './index.js';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';

function render(error: unknown, environment: 'Development' | 'Testing' | 'Production' = 'Production') {
  return renderProblem(error, { environment, traceId });
}

describe('renderProblem', () => {
  it('writes exactly the members of SPEC 7.1 for a domain problem', () => {
    const { status, headers, body } = render(new ProblemError('Auth.Forbidden', 'You may not do that.'));
    expect(status).toBe(403);
    expect(headers['content-type']).toBe('application/problem+json');
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Forbidden',
      status: 403,
      detail: 'You may not do that.',
      code: 'Auth.Forbidden',
      traceId,
    });
    expect(Object.keys(body ?? {})).not.toEqual(expect.arrayContaining(['instance']));
  });

  it('never writes instance, api or version', () => {
    for (const error of [new ProblemError('Http.NotFound'), new Error('boom'), new ValidationProblem({ a: ['x'] })]) {
      for (const environment of ['Development', 'Testing', 'Production'] as const) {
        const body = render(error, environment).body as unknown as Record<string, unknown>;
        expect(body).not.toHaveProperty('instance');
        expect(body).not.toHaveProperty('api');
        expect(body).not.toHaveProperty('version');
        expect(body.traceId).toBe(traceId);
        expect(typeof body.code).toBe('string');
      }
    }
  });

  it('uses the reason phrase as title for every kind', () => {
    const cases: Array<[string, number, string]> = [
      ['Validation.Failed', 400, 'Bad Request'],
      ['Auth.Unauthenticated', 401, 'Unauthorized'],
      ['Auth.Forbidden', 403, 'Forbidden'],
      ['Http.NotFound', 404, 'Not Found'],
      ['Http.MethodNotAllowed', 405, 'Method Not Allowed'],
      ['RateLimit.Exceeded', 429, 'Too Many Requests'],
      ['Server.Error', 500, 'Internal Server Error'],
      ['Setup.Required', 503, 'Service Unavailable'],
    ];
    for (const [code, status, title] of cases) {
      const { body } = render(new ProblemError(code));
      expect(body).toMatchObject({ status, title, code, type: 'about:blank' });
    }
  });

  it('writes errors only on validation problems', () => {
    const validation = render(new ValidationProblem({ email: ['Enter a valid e-mail address.'] }));
    expect(validation.body?.errors).toEqual({ email: ['Enter a valid e-mail address.'] });
    const other = render(new ProblemError('Auth.Forbidden', undefined, { errors: { a: ['b'] } }));
    expect(other.body).not.toHaveProperty('errors');
  });

  it('gives every 5xx one fixed detail in every environment', () => {
    for (const environment of ['Development', 'Testing', 'Production'] as const) {
      expect(render(new Error('database password is hunter2'), environment).body?.detail).toBe(GENERIC_SERVER_DETAIL);
      expect(render(new ProblemError('Setup.Required', 'custom words'), environment).body?.detail).toBe(GENERIC_SERVER_DETAIL);
    }
  });

  it('adds exception only in Development and only on 5xx', () => {
    const failure = new TypeError('cannot read x of undefined');
    const dev = render(failure, 'Development').body;
    expect(dev?.code).toBe('Server.Error');
    expect(dev?.exception).toMatchObject({ type: 'TypeError', message: 'cannot read x of undefined' });
    expect(Array.isArray(dev?.exception?.stack)).toBe(true);
    expect(render(failure, 'Testing').body).not.toHaveProperty('exception');
    expect(render(failure, 'Production').body).not.toHaveProperty('exception');
    expect(render(new ProblemError('Auth.Forbidden'), 'Development').body).not.toHaveProperty('exception');
    expect(render(new ValidationProblem({ a: ['b'] }), 'Development').body).not.toHaveProperty('exception');
  });

  it('maps exceptions as SPEC 7.4 says', () => {
    expect(render(new UnauthorizedError()).body).toMatchObject({ status: 401, code: 'Auth.Unauthenticated' });
    expect(render(new ArgumentError('page must be positive')).body).toMatchObject({
      status: 400,
      code: 'Http.ClientError',
      detail: 'page must be positive',
    });
    const zodLike = { issues: [{ path: ['RedirectUris', 0], message: 'Use https.' }] };
    expect(render(zodLike).body).toMatchObject({
      status: 400,
      code: 'Validation.Failed',
      errors: { 'redirectUris[0]': ['Use https.'] },
    });
    const malformed = Object.assign(new Error('Unexpected token'), { status: 415 });
    expect(render(malformed).body).toMatchObject({ status: 415, title: 'Unsupported Media Type', code: 'Http.ClientError' });
    expect(render(malformed).body?.detail).not.toContain('Unexpected token');
    expect(render(Object.assign(new Error('x'), { status: 502 })).body).toMatchObject({ status: 500, code: 'Server.Error' });
    expect(render('a string').body).toMatchObject({ status: 500, code: 'Server.Error' });
  });

  it('keeps unauthorized headers such as WWW-Authenticate', () => {
    const rendered = render(new UnauthorizedError('expired', { 'www-authenticate': 'Bearer error="invalid_token"' }));
    expect(rendered.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
  });

  it('answers a cancelled request with 499 and no body', () => {
    expect(render(new ClientClosedError())).toEqual({ status: 499, headers: {}, body: null });
  });
});

describe('ProblemError', () => {
  it('refuses unregistered codes', () => {
    expect(() => new ProblemError('Nope.Missing')).toThrow(/not registered/);
  });

  it('allows its own 4xx status only for Http.ClientError', () => {
    expect(new ProblemError('Http.ClientError', 'too big', { status: 413 }).status).toBe(413);
    expect(() => new ProblemError('Http.ClientError', 'x', { status: 500 })).toThrow();
    expect(() => new ProblemError('Auth.Forbidden', 'x', { status: 418 })).toThrow();
  });
});
