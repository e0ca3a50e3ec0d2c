/**
 * A URL- and id-safe slug: lowercase, every run of non-alphanumerics turned
 * into one `-`, trimmed of dashes at both ends.
 *
 * @example
 * slugify('Acme Corp.'); // 'acme-corp'
 */
export function slugify(value: string): string {
  return value
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}
