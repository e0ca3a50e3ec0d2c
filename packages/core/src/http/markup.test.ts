import { describe, expect, it } from 'vitest';
import { escapeHtml, joinMarkup, markup, SafeHtml, unsafeRaw } from './markup.js';

const PAYLOADS = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "' onmouseover='alert(1)",
  '</textarea><svg/onload=alert(1)>',
  '&lt;already&gt; &amp; escaped',
  '<!--',
  ']]><![CDATA[',
];

/** Whether a rendering holds none of the characters that open markup or leave an attribute. */
const inert = (text: string) => !/[<>"']/.test(text);

describe('escapeHtml', () => {
  it('escapes the five HTML-significant characters and nothing else', () => {
    expect(escapeHtml(`<a href="x" title='y'>Tom & Jerry</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;Tom &amp; Jerry&lt;/a&gt;',
    );
    expect(escapeHtml('plain text, ünïcode')).toBe('plain text, ünïcode');
  });

  it('renders null and undefined as empty and other values as text', () => {
    expect(escapeHtml(null)).toBe('');
    expect(escapeHtml(undefined)).toBe('');
    expect(escapeHtml(42)).toBe('42');
  });
});

describe('markup', () => {
  it('keeps the literal parts as written and returns SafeHtml whose text is the markup', () => {
    const page = markup`<p class="x">Hello</p>`;
    expect(page).toBeInstanceOf(SafeHtml);
    expect(page.text).toBe('<p class="x">Hello</p>');
    expect(String(page)).toBe('<p class="x">Hello</p>');
    expect(`${page}`).toBe('<p class="x">Hello</p>');
  });

  it.each(PAYLOADS)('escapes %j in text position exactly as escapeHtml does', (payload) => {
    const rendered = markup`<p>${payload}</p>`.text;
    expect(rendered).toBe(`<p>${escapeHtml(payload)}</p>`);
    expect(inert(rendered.slice(3, -4))).toBe(true);
  });

  it.each(PAYLOADS)('escapes %j in double- and single-quoted attribute values', (payload) => {
    const double = markup`<input value="${payload}">`.text;
    const single = markup`<input value='${payload}'>`.text;
    expect(double).toBe(`<input value="${escapeHtml(payload)}">`);
    expect(single).toBe(`<input value='${escapeHtml(payload)}'>`);
    // Nothing the value holds can close the quotes or open a tag.
    expect(inert(double.slice('<input value="'.length, -2))).toBe(true);
    expect(inert(single.slice("<input value='".length, -2))).toBe(true);
  });

  it('writes \' as &#39; and " as &quot;, as the pages always did', () => {
    expect(markup`${`O'Brien "quoted"`}`.text).toBe('O&#39;Brien &quot;quoted&quot;');
  });

  it('escapes every value once: an escaped string is escaped again, a nested template is not', () => {
    const inner = markup`<b>${'<i>'}</b>`;
    expect(markup`<p>${inner}</p>`.text).toBe('<p><b>&lt;i&gt;</b></p>');
    expect(markup`<p>${inner.text}</p>`.text).toBe('<p>&lt;b&gt;&amp;lt;i&amp;gt;&lt;/b&gt;</p>');
  });

  it('interpolates unsafeRaw as is, for trusted constants only', () => {
    expect(markup`<style>${unsafeRaw('a>b{color:red}')}</style>`.text).toBe('<style>a>b{color:red}</style>');
  });

  it('joins lists without a separator, escaping strings and keeping SafeHtml', () => {
    const items = ['<a>', 'b'].map((name) => markup`<li>${name}</li>`);
    expect(markup`<ul>${items}</ul>`.text).toBe('<ul><li>&lt;a&gt;</li><li>b</li></ul>');
    expect(markup`${['<x>', unsafeRaw('<y>'), ['<z>']]}`.text).toBe('&lt;x&gt;<y>&lt;z&gt;');
    expect(markup`<ul>${[]}</ul>`.text).toBe('<ul></ul>');
  });

  it('renders undefined, null and false as nothing, and numbers as text', () => {
    const flag = false as boolean;
    expect(markup`[${undefined}|${null}|${false}|${flag && markup`<b>on</b>`}]`.text).toBe('[|||]');
    expect(markup`${0} ${12.5} ${10n}`.text).toBe('0 12.5 10');
    expect(markup`${''}`.text).toBe('');
  });

  it('escapes a value that is no markup value at run time instead of trusting it', () => {
    const sneaky = { toString: () => '<script>' } as unknown as string;
    expect(markup`${sneaky}`.text).toBe('&lt;script&gt;');
    const lookalike = { text: '<script>' } as unknown as SafeHtml;
    expect(markup`${lookalike}`.text).toBe('[object Object]');
  });
});

describe('joinMarkup', () => {
  it('puts the separator between values, escaping it like text', () => {
    const rows = ['<1>', '2'].map((value) => markup`<tr><td>${value}</td></tr>`);
    expect(joinMarkup(rows, '\n').text).toBe('<tr><td>&lt;1&gt;</td></tr>\n<tr><td>2</td></tr>');
    expect(joinMarkup(['a', 'b'], '<br>').text).toBe('a&lt;br&gt;b');
    expect(joinMarkup([], '\n').text).toBe('');
  });
});
