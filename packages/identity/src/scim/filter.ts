import { type Filter, parse } from 'scim2-parse-filter';
import { ScimError } from './errors.js';
import { GROUP_SCHEMA, USER_SCHEMA } from './schemas.js';

/** The comparison operators of RFC 7644 §3.4.2.2. */
export type CompareOperator = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';

/**
 * A filter checked against a resource's filterable attributes, in terms a
 * store translates to SQL: `field` names a store column, never client text.
 */
export type ScimCondition =
  | { readonly kind: 'const'; readonly value: boolean }
  | {
      readonly kind: 'compare';
      readonly field: string;
      readonly type: AttributeType;
      readonly op: CompareOperator;
      readonly value: string | boolean | number | null;
      readonly caseExact: boolean;
    }
  | { readonly kind: 'present'; readonly field: string }
  | { readonly kind: 'and' | 'or'; readonly conditions: readonly ScimCondition[] }
  | { readonly kind: 'not'; readonly condition: ScimCondition };

/** The value type of a filterable attribute. */
export type AttributeType = 'string' | 'boolean' | 'dateTime';

/** A filterable attribute: a store field, or a constant every resource has (e.g. `emails.type` is always `work`). */
export type FilterableAttribute =
  | {
      readonly field: string;
      readonly type: AttributeType;
      readonly caseExact?: boolean;
      readonly operators?: readonly CompareOperator[];
    }
  | { readonly constant: string | boolean };

/** The filterable attributes of a resource type, by lowercase path (without the schema URN). */
export type FilterableAttributes = Readonly<Record<string, FilterableAttribute>>;

/** What `/Users` filters on. Every member has one e-mail address, of type `work`, primary. */
export const USER_FILTER_ATTRIBUTES: FilterableAttributes = {
  id: { field: 'id', type: 'string', caseExact: true },
  username: { field: 'userName', type: 'string' },
  externalid: { field: 'externalId', type: 'string', caseExact: true },
  emails: { field: 'email', type: 'string' },
  'emails.value': { field: 'email', type: 'string' },
  'emails.type': { constant: 'work' },
  'emails.primary': { constant: true },
  active: { field: 'active', type: 'boolean' },
  'name.familyname': { field: 'familyName', type: 'string' },
  'name.givenname': { field: 'givenName', type: 'string' },
  'meta.created': { field: 'created', type: 'dateTime' },
  'meta.lastmodified': { field: 'lastModified', type: 'dateTime' },
};

/** What `/Groups` filters on; `members.value` only with `eq`. */
export const GROUP_FILTER_ATTRIBUTES: FilterableAttributes = {
  id: { field: 'id', type: 'string', caseExact: true },
  displayname: { field: 'displayName', type: 'string' },
  externalid: { field: 'externalId', type: 'string', caseExact: true },
  members: { field: 'member', type: 'string', caseExact: true, operators: ['eq'] },
  'members.value': { field: 'member', type: 'string', caseExact: true, operators: ['eq'] },
  'meta.created': { field: 'created', type: 'dateTime' },
  'meta.lastmodified': { field: 'lastModified', type: 'dateTime' },
};

const MAX_FILTER_LENGTH = 2000;

function invalid(detail: string): ScimError {
  return new ScimError(400, detail, 'invalidFilter');
}

/** The lowercase attribute path without a core schema prefix. */
function normalizePath(path: string): string {
  let lower = path.toLowerCase();
  for (const schema of [USER_SCHEMA, GROUP_SCHEMA]) {
    const prefix = `${schema.toLowerCase()}:`;
    if (lower.startsWith(prefix)) lower = lower.slice(prefix.length);
  }
  return lower;
}

function compareConstant(op: CompareOperator, actual: string | boolean, expected: unknown): boolean {
  if (typeof actual === 'boolean') {
    if (op === 'eq') return expected === actual;
    if (op === 'ne') return expected !== actual;
    throw invalid(`The operator "${op}" does not apply to a boolean attribute.`);
  }
  if (typeof expected !== 'string') return op === 'ne';
  const a = actual.toLowerCase();
  const e = expected.toLowerCase();
  switch (op) {
    case 'eq':
      return a === e;
    case 'ne':
      return a !== e;
    case 'co':
      return a.includes(e);
    case 'sw':
      return a.startsWith(e);
    case 'ew':
      return a.endsWith(e);
    case 'gt':
      return a > e;
    case 'ge':
      return a >= e;
    case 'lt':
      return a < e;
    case 'le':
      return a <= e;
  }
}

function translate(node: Filter, attributes: FilterableAttributes, prefix: string): ScimCondition {
  switch (node.op) {
    case 'and':
    case 'or':
      return { kind: node.op, conditions: node.filters.map((child) => translate(child, attributes, prefix)) };
    case 'not':
      return { kind: 'not', condition: translate(node.filter, attributes, prefix) };
    case '[]': {
      const path = normalizePath(node.attrPath);
      if (prefix) throw invalid('A value filter cannot be nested in another.');
      return translate(node.valFilter, attributes, `${path}.`);
    }
    default: {
      const raw = normalizePath(node.attrPath);
      // `emails[type eq "work"].value` arrives as `emails.value` beside the bracket.
      const path = prefix && !raw.startsWith(prefix) ? `${prefix}${raw}` : raw;
      const attribute = attributes[path];
      if (!attribute) throw invalid(`The attribute "${node.attrPath}" cannot be filtered on.`);
      if (node.op === 'pr') {
        return 'constant' in attribute ? { kind: 'const', value: true } : { kind: 'present', field: attribute.field };
      }
      const op = node.op as CompareOperator;
      const value = (node as { compValue: string | boolean | number | null }).compValue;
      if ('constant' in attribute) return { kind: 'const', value: compareConstant(op, attribute.constant, value) };
      if (attribute.operators && !attribute.operators.includes(op)) {
        throw invalid(`The attribute "${node.attrPath}" supports only ${attribute.operators.join(', ')}.`);
      }
      if (attribute.type === 'boolean') {
        if (op !== 'eq' && op !== 'ne') throw invalid(`The operator "${op}" does not apply to "${node.attrPath}".`);
        if (typeof value !== 'boolean') throw invalid(`"${node.attrPath}" compares with true or false.`);
      } else if (typeof value !== 'string') {
        throw invalid(`"${node.attrPath}" compares with a quoted string.`);
      }
      return {
        kind: 'compare',
        field: attribute.field,
        type: attribute.type,
        op,
        value,
        caseExact: attribute.caseExact ?? false,
      };
    }
  }
}

/**
 * Parses a SCIM filter (RFC 7644 §3.4.2.2) with `scim2-parse-filter` and
 * checks it against the resource's filterable attributes.
 *
 * @example
 * parseScimFilter('userName eq "bjensen"', USER_FILTER_ATTRIBUTES);
 * // { kind: 'compare', field: 'userName', op: 'eq', value: 'bjensen', type: 'string', caseExact: false }
 * @throws ScimError 400 `invalidFilter` for bad syntax, an unknown attribute or a value of the wrong type.
 */
export function parseScimFilter(filter: string, attributes: FilterableAttributes): ScimCondition {
  if (filter.length > MAX_FILTER_LENGTH) throw invalid(`A filter has at most ${MAX_FILTER_LENGTH} characters.`);
  let tree: Filter;
  try {
    tree = parse(filter);
  } catch (error) {
    throw invalid(`The filter could not be parsed: ${(error as Error).message}`);
  }
  return simplify(translate(tree, attributes, ''));
}

/** Folds constants: `const and x` is `x` or false, `const or x` is true or `x`. */
function simplify(condition: ScimCondition): ScimCondition {
  if (condition.kind === 'not') {
    const inner = simplify(condition.condition);
    return inner.kind === 'const' ? { kind: 'const', value: !inner.value } : { kind: 'not', condition: inner };
  }
  if (condition.kind !== 'and' && condition.kind !== 'or') return condition;
  const absorbing = condition.kind === 'or';
  const kept: ScimCondition[] = [];
  for (const child of condition.conditions.map(simplify)) {
    if (child.kind === 'const') {
      if (child.value === absorbing) return child;
      continue;
    }
    kept.push(child);
  }
  if (kept.length === 0) return { kind: 'const', value: !absorbing };
  if (kept.length === 1) return kept[0] as ScimCondition;
  return { kind: condition.kind, conditions: kept };
}
