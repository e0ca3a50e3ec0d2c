import { describe, expect, it } from 'vitest';
import { pageCsp, pageSecurityHeaders, webOrigins } from './security-headers.js';

const directives = (csp: string) => new Map(csp.split('; ').map((part) => [part.split(' ')[0], part.split(' ').slice(1)]));

describe('page security headers', () => {
  it('lets forms reach only the page itself unless told otherwise', () => {
    const csp = directives(pageCsp());
    expect(csp.get('form-action')).toEqual(["'self'"]);
    expect(csp.get('script-src')).toEqual(["'self'"]);
    expect(csp.get('frame-src')).toEqual(["'none'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    expect(pageCsp()).not.toMatch(/unsafe-inline|http: |https: /);
  });

  it('adds the origin of the redirect a form leads to, never a scheme or a path', () => {
    const csp = directives(pageCsp({ formTargets: ['https://app.example.com/callback?x=1', 'https://app.example.com/other'] }));
    expect(csp.get('form-action')).toEqual(["'self'", 'https://app.example.com']);
  });

  it('leaves out targets that would widen the policy', () => {
    expect(webOrigins(['com.example.app:/callback', 'javascript:alert(1)', 'not a url', undefined, null, ''])).toEqual([]);
    expect(webOrigins(['http://127.0.0.1:9/cb', 'http://127.0.0.1:9/other'])).toEqual(['http://127.0.0.1:9']);
    // A quote or a semicolon cannot be smuggled into the header: origins are serialized by URL.
    expect(webOrigins(["https://a.example.com/;script-src 'unsafe-inline'"])).toEqual(['https://a.example.com']);
  });

  it('names frame origins for front-channel logout only', () => {
    const csp = directives(pageCsp({ frameTargets: ['https://a.example.com/logout?iss=x', 'https://b.example.com/fc'] }));
    expect(csp.get('frame-src')).toEqual(['https://a.example.com', 'https://b.example.com']);
    expect(csp.get('form-action')).toEqual(["'self'"]);
  });

  it('forbids framing, caching and referrers', () => {
    expect(pageSecurityHeaders()).toMatchObject({
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
  });
});
