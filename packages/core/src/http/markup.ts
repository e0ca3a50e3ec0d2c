/**
 * HTML built by one auto-escaping tagged template: every page, mail and
 * viewer idt renders. Interpolated values are escaped unless they are
 * {@link SafeHtml} (a nested template, or a trusted constant wrapped by
 * {@link unsafeRaw}), so a value can only become markup by a visible,
 * deliberate step.
 *
 * Written here rather than taken from a library (`hono/html` is the model):
 * it is about sixty lines, keeps `@idt/core` free of a dependency for it,
 * and escapes exactly as {@link escapeHtml} always did (`'` as `&#39;`), so
 * pages stay byte-identical.
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escapes a value for HTML text and quoted attribute values (`null` and
 * `undefined` become the empty string): the escaper of {@link markup}.
 *
 * @example
 * escapeHtml(`<a href="x">Tom & Jerry</a>`); // '&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&lt;/a&gt;'
 */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

/**
 * Text that is HTML already: what {@link markup} returns and interpolates
 * unescaped. Build one with `markup` or, for a trusted constant (a
 * stylesheet, an inline icon), with {@link unsafeRaw}; constructing one
 * vouches that its text is safe markup.
 */
export class SafeHtml {
  /** The markup. */
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  /** The markup, so that a `SafeHtml` is its text wherever a string is expected. */
  toString(): string {
    return this.text;
  }
}

/**
 * What {@link markup} interpolates: text and numbers (escaped), `SafeHtml`
 * (as is), lists of either (joined without a separator), and `false`,
 * `null` or `undefined` (nothing, for `condition && markup\`...\``).
 */
export type MarkupValue = SafeHtml | string | number | bigint | false | null | undefined | readonly MarkupValue[];

function render(value: unknown): string {
  if (typeof value === 'string') return escapeHtml(value);
  if (value instanceof SafeHtml) return value.text;
  if (value === undefined || value === null || value === false) return '';
  if (Array.isArray(value)) {
    let out = '';
    for (const item of value) out += render(item);
    return out;
  }
  return escapeHtml(value);
}

/**
 * The auto-escaping template tag. Every interpolated value is escaped for
 * text and quoted attribute values alike (`&`, `<`, `>`, `"` and `'`),
 * unless it is {@link SafeHtml}. Attribute values must be quoted; escaping
 * does not vet a URL's scheme, so `href` and `src` take URLs idt built or
 * checked.
 *
 * @example
 * const item = (name: string) => markup`<li>${name}</li>`;
 * markup`<ul class="${kind}">${names.map(item)}</ul>`.toString();
 */
export function markup(strings: TemplateStringsArray, ...values: readonly MarkupValue[]): SafeHtml {
  let out = strings[0] as string;
  for (let index = 0; index < values.length; index++) out += render(values[index]) + (strings[index + 1] as string);
  return new SafeHtml(out);
}

/**
 * Trusted text as {@link SafeHtml}, interpolated without escaping: for
 * constants of the code (a stylesheet, an icon), never for anything a
 * request, a database row or a setting supplies.
 *
 * @example
 * markup`<style>${unsafeRaw(VIEWER_STYLE)}</style>`;
 */
export function unsafeRaw(text: string): SafeHtml {
  return new SafeHtml(text);
}

/**
 * Values joined by a separator (escaped like any text), as one {@link SafeHtml}.
 *
 * @example
 * joinMarkup(rows.map((row) => markup`<tr><td>${row.name}</td></tr>`), '\n');
 */
export function joinMarkup(values: readonly MarkupValue[], separator: string): SafeHtml {
  const glue = escapeHtml(separator);
  let out = '';
  for (let index = 0; index < values.length; index++) out += (index === 0 ? '' : glue) + render(values[index]);
  return new SafeHtml(out);
}
