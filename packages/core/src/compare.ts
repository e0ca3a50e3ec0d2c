/**
 * Orders two strings by their UTF-16 code units, as `Array.prototype.sort`
 * and knex's own migration sources do: the same order on every machine,
 * whatever its locale, where `localeCompare` follows the process's locale
 * (and loads ICU's collation data, some 3 MiB of resident memory, the first
 * time it runs). For identifiers, timestamps and names idt sorts, not for
 * text shown to people.
 *
 * @example
 * ['b', 'B', 'a'].sort(compareCodeUnits); // ['B', 'a', 'b']
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
