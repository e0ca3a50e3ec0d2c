import { describe, expect, it } from 'vitest';
import { escapeHtml } from './responses.js';

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
