import {
  dialectOf,
  type KnexEffectsOptions,
  knexUnitOfWork,
  listStatement,
  selectListRows,
  selectRows,
  toIso,
  toIsoOrNull,
} from '@idt/core/knex';
import type { Knex } from 'knex';
import type { MembershipStatus } from '../access/store.js';
import type { ScimCondition } from '../scim/filter.js';
import type { ScimGroupRecord } from '../scim/groups.js';
import type { ScimLink, ScimPage, ScimStore, ScimWrites } from '../scim/store.js';
import type { ScimUserAttributes, ScimUserRecord } from '../scim/users.js';
import type { UsersStore } from '../users/store.js';
import { writeRevocation } from './access-store.js';
import { lockOrganization, replaceRoles } from './accounts-shared.js';

type Row = Record<string, any>;

const TOKENS = 'identity_scim_tokens';
const LINKS = 'identity_scim_users';
const GROUPS = 'identity_scim_groups';
const GROUP_MEMBERS = 'identity_scim_group_members';
const MAPPINGS = 'identity_scim_role_mappings';
const ADMIN_ROLES = ['owner', 'admin'];
const TOUCH_INTERVAL_MS = 60_000;

/**
 * Which memberships SCIM lists as Users (every status named, so a new one
 * must be placed); {@link listedUserCount} counts the unlisted ones.
 */
const LISTED: Record<MembershipStatus, boolean> = { active: true, suspended: true, pending: false, denied: false };
const LISTED_STATUSES = Object.keys(LISTED).filter((status) => LISTED[status as MembershipStatus]);
const UNLISTED_STATUSES = Object.keys(LISTED).filter((status) => !LISTED[status as MembershipStatus]);

/** SQL of the filterable fields of a SCIM User (see `USER_FILTER_ATTRIBUTES`), over `m`, `u` and `s`. */
const USER_FIELDS: Record<string, string> = {
  id: 'm.user_id',
  userName: 'coalesce(s.user_name, u.email)',
  externalId: 's.external_id',
  email: 'u.email',
  familyName: 'coalesce(s.family_name, u.last_name)',
  givenName: 'coalesce(s.given_name, u.first_name)',
  created: 'm.created_at',
  lastModified: 'coalesce(s.updated_at, m.updated_at)',
};

/** SQL of the filterable fields of a Group, over `g`. */
const GROUP_FIELDS: Record<string, string> = {
  id: 'g.id',
  displayName: 'g.display_name',
  externalId: 'g.external_id',
  created: 'g.created_at',
  lastModified: 'g.updated_at',
};

const LIKE_ESCAPE = '\\';
const escapeLike = (value: string) => value.replace(/[\\%_]/g, (char) => `${LIKE_ESCAPE}${char}`);

/**
 * One page of a SCIM list: the filter applied to `query`, the matches
 * counted, then the page (`startIndex` is 1-based) in a stable `order`; no
 * rows when the page starts past the end.
 */
async function filteredPage(
  query: () => Knex.QueryBuilder,
  filter: ScimCondition | undefined,
  fields: Record<string, string>,
  page: ScimPage,
  shape: { readonly order: readonly string[]; readonly columns: readonly string[] },
): Promise<{ total: number; rows: Row[] }> {
  const base = () => {
    const built = query();
    if (filter) {
      const { sql, bindings } = toSql(filter, fields);
      built.whereRaw(sql, bindings as Knex.RawBinding[]);
    }
    return built;
  };
  const counted = (await base().count({ n: '*' }).first()) as Row | undefined;
  const total = Number(counted?.n ?? 0);
  if (page.count === 0 || total < page.startIndex) return { total, rows: [] };
  const rows: Row[] = await base()
    .orderBy(shape.order.map((column) => ({ column })))
    .limit(page.count)
    .offset(page.startIndex - 1)
    .select([...shape.columns]);
  return { total, rows };
}

/**
 * Translates a checked filter to SQL. Only `fields` (fixed column
 * expressions) are ever written into the text; every value is a binding.
 */
function toSql(condition: ScimCondition, fields: Record<string, string>): { sql: string; bindings: unknown[] } {
  switch (condition.kind) {
    case 'const':
      return { sql: condition.value ? '1 = 1' : '1 = 0', bindings: [] };
    case 'and':
    case 'or': {
      const parts = condition.conditions.map((child) => toSql(child, fields));
      return {
        sql: `(${parts.map((part) => part.sql).join(` ${condition.kind} `)})`,
        bindings: parts.flatMap((part) => part.bindings),
      };
    }
    case 'not': {
      const inner = toSql(condition.condition, fields);
      return { sql: `not (${inner.sql})`, bindings: inner.bindings };
    }
    case 'present': {
      if (condition.field === 'active') return { sql: '1 = 1', bindings: [] };
      if (condition.field === 'member') {
        return { sql: `exists (select 1 from ${GROUP_MEMBERS} pm where pm.group_id = g.id)`, bindings: [] };
      }
      const expression = fields[condition.field] as string;
      return { sql: `(${expression} is not null and ${expression} <> '')`, bindings: [] };
    }
    case 'compare': {
      const { op, value, field } = condition;
      if (field === 'active') {
        const wantsActive = (op === 'eq') === (value === true);
        return { sql: wantsActive ? "m.status = 'active'" : "m.status <> 'active'", bindings: [] };
      }
      if (field === 'member') {
        return {
          sql: `exists (select 1 from ${GROUP_MEMBERS} em where em.group_id = g.id and em.user_id = ?)`,
          bindings: [String(value).toLowerCase()],
        };
      }
      const raw = fields[field] as string;
      const text = String(value);
      const folded = condition.caseExact || condition.type === 'dateTime' ? text : text.toLowerCase();
      const expression = condition.caseExact || condition.type === 'dateTime' ? raw : `lower(${raw})`;
      const bound = condition.type === 'dateTime' ? new Date(text).toISOString() : folded;
      switch (op) {
        case 'eq':
          return { sql: `${expression} = ?`, bindings: [bound] };
        case 'ne':
          return { sql: `(${raw} is null or ${expression} <> ?)`, bindings: [bound] };
        case 'co':
          return { sql: `${expression} like ? escape ?`, bindings: [`%${escapeLike(folded)}%`, LIKE_ESCAPE] };
        case 'sw':
          return { sql: `${expression} like ? escape ?`, bindings: [`${escapeLike(folded)}%`, LIKE_ESCAPE] };
        case 'ew':
          return { sql: `${expression} like ? escape ?`, bindings: [`%${escapeLike(folded)}`, LIKE_ESCAPE] };
        case 'gt':
          return { sql: `${expression} > ?`, bindings: [bound] };
        case 'ge':
          return { sql: `${expression} >= ?`, bindings: [bound] };
        case 'lt':
          return { sql: `${expression} < ?`, bindings: [bound] };
        case 'le':
          return { sql: `${expression} <= ?`, bindings: [bound] };
      }
    }
  }
}

function parseJson<T>(value: unknown, fallback: T): T {
  if (typeof value !== 'string') return (value as T) ?? fallback;
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

function later(a: string, b: string | null): string {
  return b !== null && b > a ? b : a;
}

function userFromRow(row: Row, groups: ReadonlyArray<{ id: string; displayName: string }>): ScimUserRecord {
  const membershipUpdated = toIso(row.m_updated);
  return {
    id: String(row.id),
    userName: String(row.user_name ?? row.email),
    externalId: (row.external_id as string | null) ?? null,
    email: String(row.email),
    givenName: String(row.given_name ?? row.first_name ?? ''),
    familyName: String(row.family_name ?? row.last_name ?? ''),
    active: row.status === 'active',
    attributes: parseJson<ScimUserAttributes>(row.attributes, {}),
    created: toIso(row.m_created),
    lastModified: later(membershipUpdated, toIsoOrNull(row.s_updated)),
    groups,
  };
}

const USER_COLUMNS = [
  'm.user_id as id',
  'm.status',
  'm.created_at as m_created',
  'm.updated_at as m_updated',
  'u.email',
  'u.first_name',
  'u.last_name',
  's.user_name',
  's.external_id',
  's.given_name',
  's.family_name',
  's.attributes',
  's.updated_at as s_updated',
];

function usersQuery(db: Knex, organizationId: string): Knex.QueryBuilder {
  return db('identity_memberships as m')
    .join('identity_users as u', 'u.id', 'm.user_id')
    .leftJoin(`${LINKS} as s`, (join) => join.on('s.organization_id', 'm.organization_id').andOn('s.user_id', 'm.user_id'))
    .where('m.organization_id', organizationId)
    .whereIn('m.status', LISTED_STATUSES)
    .whereNull('s.deleted_at');
}

/**
 * How many Users {@link usersQuery} lists, without reading them: the
 * organization's trigger-kept member count, less its `pending` and `denied`
 * memberships and the users the directory deleted: both few, read through
 * the index on `(organization_id, status)` and the partial index of
 * migration 0013 (the deleted users drive the last count, so it never walks
 * the listed members).
 */
async function listedUserCount(db: Knex, organizationId: string): Promise<number> {
  const [[count] = []] = await selectRows(db, LISTED_COUNT_SQL, [organizationId, organizationId, organizationId]);
  return Number(count ?? 0);
}

/** Fixed status names as SQL literals (they are constants of this file, never input). */
const quoted = (values: readonly string[]) => values.map((value) => `'${value}'`).join(', ');

/** {@link listedUserCount}'s statement: the statuses are written into it (fixed values, never input). */
const LISTED_COUNT = `coalesce((select members from identity_organization_counts where organization_id = ?), 0)
  - (select count(*) from identity_memberships where organization_id = ? and status in (${quoted(UNLISTED_STATUSES)}))
  - (select count(*) from ${LINKS} s where s.organization_id = ? and s.deleted_at is not null
      and exists (select 1 from identity_memberships m where m.organization_id = s.organization_id
        and m.user_id = s.user_id and m.status in (${quoted(LISTED_STATUSES)})))`;
const LISTED_COUNT_SQL = `select ${LISTED_COUNT} as n`;

/**
 * The `LIMIT` of a page statement. SQLite plans a literal `LIMIT` better
 * than a bound one (half the time of a 20-row page at 10,000 members), and
 * directories use one or two page sizes, so few statements are prepared:
 * only a whole number from 1 to {@link MAX_PAGE} is ever written. PostgreSQL
 * keeps the bound `?` (`'?'`): its prepared statement's generic plan is the
 * index walk, where a literal made it choose a worse plan.
 */
function pageLimit(count: number | '?'): number | '?' {
  if (count === '?') return count;
  if (!Number.isInteger(count) || count < 1 || count > MAX_PAGE)
    throw new RangeError(`A SCIM page holds 1 to ${MAX_PAGE} resources`);
  return count;
}

/** The largest page a page statement is written for (SCIM's `count` is at most 200). */
const MAX_PAGE = 1000;

/** {@link USER_COLUMNS} without the user's own columns (`u`), which the users cache gives. */
const LINK_COLUMNS = USER_COLUMNS.filter((column) => !column.startsWith('u.'));
const LINK_ROW_KEYS = LINK_COLUMNS.map((column) => column.split(/ as |\./).at(-1) as string);

/**
 * A page of the unfiltered Users list, in the order of the index on
 * (organization_id, created_at, id), each row led by the list's total (the
 * count is a constant subquery: evaluated once, not per row) and ended by
 * whether the user is in any directory group (users in none need no groups
 * read). The users' own columns are not joined: they come from the users
 * cache (one statement for the ones it lacks).
 */
const LINKS_PAGE_SQL = (count: number | '?') => `select (${LISTED_COUNT}) as total, ${LINK_COLUMNS.join(', ')},
    exists (select 1 from ${GROUP_MEMBERS} gm where gm.user_id = m.user_id) as in_groups
  from identity_memberships m
  left join ${LINKS} s on s.organization_id = m.organization_id and s.user_id = m.user_id
  where m.organization_id = ? and m.status in (${quoted(LISTED_STATUSES)}) and s.deleted_at is null
  order by m.created_at, m.id
  limit ${pageLimit(count)} offset ?`;

/** The groups of a page's users, by user (the page's ids in the list). */
const GROUPS_OF_USERS = listStatement(
  (ids) => `select gm.user_id, g.id, g.display_name from ${GROUP_MEMBERS} gm join ${GROUPS} g on g.id = gm.group_id
    where g.organization_id = ? and gm.user_id in (${ids}) order by g.display_name_key`,
  { kind: 'in' },
);

/** The token a SCIM bearer hashes to, of an active organization, not revoked. */
const RESOLVE_TOKEN_SQL = `select t.id, t.organization_id, t.name, t.last_used_at from ${TOKENS} t
  join identity_organizations o on o.id = t.organization_id
  where t.token_hash = ? and o.status = 'active' and t.revoked_at is null`;

/**
 * A page of the unfiltered Users list and its total, through fixed
 * statements (one when the page has rows); the users' own columns come from
 * `users` (a user deleted since the page was read is left out).
 */
async function unfilteredUsersPage(
  db: Knex,
  organizationId: string,
  page: ScimPage,
  users: Pick<UsersStore, 'findMany'>,
): Promise<{ total: number; rows: Row[] }> {
  if (page.count > 0) {
    const literal = dialectOf(db) === 'sqlite';
    const bindings = [
      organizationId,
      organizationId,
      organizationId,
      organizationId,
      ...(literal ? [] : [page.count]),
      page.startIndex - 1,
    ];
    const values = await selectRows(db, LINKS_PAGE_SQL(literal ? page.count : '?'), bindings);
    if (values.length > 0) {
      const rows = values.map((row) => rowOfValues(LINK_ROW_KEYS, row));
      const found = await users.findMany(rows.map((row) => String(row.id)));
      const complete: Row[] = [];
      rows.forEach((row, index) => {
        const user = found[index];
        if (!user) return;
        row.email = user.email;
        row.first_name = user.firstName;
        row.last_name = user.lastName;
        complete.push(row);
      });
      return { total: Number(values[0]?.[0] ?? 0), rows: complete };
    }
  }
  return { total: await listedUserCount(db, organizationId), rows: [] };
}

/** A row of a page statement (its total first, `in_groups` last) as the object {@link userFromRow} reads. */
function rowOfValues(keys: readonly string[], values: unknown[]): Row {
  const row: Row = {};
  for (let index = 0; index < keys.length; index++) row[keys[index] as string] = values[index + 1];
  row.in_groups = values[keys.length + 1];
  return row;
}

async function groupsOfUsers(db: Knex, organizationId: string, userIds: readonly string[]) {
  const byUser = new Map<string, Array<{ id: string; displayName: string }>>(userIds.map((id) => [id, []]));
  if (userIds.length === 0) return byUser;
  const rows = await selectListRows(db, GROUPS_OF_USERS, [organizationId], userIds);
  for (const [userId, id, displayName] of rows)
    byUser.get(String(userId))?.push({ id: String(id), displayName: String(displayName) });
  return byUser;
}

async function membersOfGroups(db: Knex, groupIds: readonly string[]) {
  const byGroup = new Map<string, Array<{ id: string; display: string }>>(groupIds.map((id) => [id, []]));
  if (groupIds.length === 0) return byGroup;
  const rows: Row[] = await db(`${GROUP_MEMBERS} as gm`)
    .join('identity_users as u', 'u.id', 'gm.user_id')
    .whereIn('gm.group_id', [...groupIds])
    .orderBy(['gm.group_id', 'gm.user_id'])
    .select('gm.group_id', 'gm.user_id', 'u.first_name', 'u.last_name', 'u.email');
  for (const row of rows) {
    const display = `${row.first_name} ${row.last_name}`.trim() || row.email;
    byGroup.get(row.group_id)?.push({ id: row.user_id, display });
  }
  return byGroup;
}

function groupFromRow(row: Row, members: ScimGroupRecord['members']): ScimGroupRecord {
  return {
    id: row.id,
    displayName: row.display_name,
    externalId: row.external_id ?? null,
    created: toIso(row.created_at),
    lastModified: toIso(row.updated_at),
    ...(members ? { members } : {}),
  };
}

function linkFromRow(row: Row | undefined): ScimLink | undefined {
  return row
    ? { userId: row.user_id, owned: Boolean(row.owned), deleted: row.deleted_at !== null && row.deleted_at !== undefined }
    : undefined;
}

function scimWrites(trx: Knex.Transaction): ScimWrites {
  return {
    async lockOrganization(organizationId) {
      if (!(await lockOrganization(trx, organizationId))) return undefined;
      const activeOwnerIds = (await trx('identity_memberships as m')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .join('identity_users as u', 'u.id', 'm.user_id')
        .where({ 'm.organization_id': organizationId, 'm.status': 'active', 'u.status': 'active', 'r.role': 'owner' })
        .pluck('m.user_id')) as string[];
      return { activeOwnerIds };
    },
    async findLink(organizationId, by) {
      const query = trx(LINKS).where({ organization_id: organizationId });
      if (by.userNameKey !== undefined) query.andWhere({ user_name_key: by.userNameKey });
      else query.andWhere({ external_id: by.externalId ?? null });
      return linkFromRow(await query.first('user_id', 'owned', 'deleted_at'));
    },
    async linkOf(organizationId, userId) {
      return linkFromRow(
        await trx(LINKS).where({ organization_id: organizationId, user_id: userId }).first('user_id', 'owned', 'deleted_at'),
      );
    },
    async findAccountByEmail(email) {
      const row = await trx('identity_users').where({ email }).first('id');
      return row ? { id: row.id } : undefined;
    },
    async insertAccount(account) {
      await trx('identity_users').insert({
        id: account.id,
        email: account.email,
        username: account.email,
        first_name: account.firstName,
        last_name: account.lastName,
        password_hash: null,
        status: 'active',
        email_verified: false,
        created_at: account.at,
        updated_at: account.at,
      });
    },
    async updateAccount(userId, account) {
      const current = await trx('identity_users').where({ id: userId }).first('email');
      await trx('identity_users')
        .where({ id: userId })
        .update({
          email: account.email,
          username: account.email,
          first_name: account.firstName,
          last_name: account.lastName,
          updated_at: account.at,
          // A new address is not verified yet.
          ...(current && current.email !== account.email ? { email_verified: false } : {}),
        });
    },
    async countOtherMemberships(userId, organizationId) {
      const rows: Row[] = await trx('identity_memberships')
        .where({ user_id: userId })
        .whereNot({ organization_id: organizationId })
        .select('status');
      return { any: rows.length, active: rows.filter((row) => row.status === 'active').length };
    },
    async membershipOf(organizationId, userId) {
      const row = await trx('identity_memberships')
        .where({ organization_id: organizationId, user_id: userId })
        .first('id', 'status');
      if (!row) return undefined;
      const roles = (await trx('identity_membership_roles')
        .where({ membership_id: row.id })
        .orderBy('role')
        .pluck('role')) as string[];
      return { id: row.id, status: row.status, roles };
    },
    async insertMembership(membership) {
      await trx('identity_memberships').insert({
        id: membership.id,
        organization_id: membership.organizationId,
        user_id: membership.userId,
        status: membership.status,
        created_at: membership.at,
        updated_at: membership.at,
      });
      await replaceRoles(trx, membership.id, membership.roles);
    },
    async updateMembership(membershipId, change) {
      await trx('identity_memberships')
        .where({ id: membershipId })
        .update({ ...(change.status ? { status: change.status } : {}), updated_at: change.at });
      if (change.roles) await replaceRoles(trx, membershipId, change.roles);
    },
    async writeLink(link) {
      const row = {
        user_name: link.userName,
        user_name_key: link.userName.toLowerCase(),
        external_id: link.externalId,
        given_name: link.givenName,
        family_name: link.familyName,
        attributes: JSON.stringify(link.attributes),
        owned: link.owned,
        updated_at: link.at,
        deleted_at: null,
      };
      // A deleted User gives its userName up to whoever is provisioned under it next.
      await trx(LINKS)
        .where({ organization_id: link.organizationId, user_name_key: row.user_name_key })
        .whereNot({ user_id: link.userId })
        .whereNotNull('deleted_at')
        .update({ user_name_key: trx.raw("'deleted:' || user_id") });
      const updated = await trx(LINKS).where({ organization_id: link.organizationId, user_id: link.userId }).update(row);
      if (updated === 0) {
        await trx(LINKS).insert({ organization_id: link.organizationId, user_id: link.userId, created_at: link.at, ...row });
      }
    },
    async deleteLink(organizationId, userId, at) {
      await trx(LINKS).where({ organization_id: organizationId, user_id: userId }).update({ deleted_at: at, updated_at: at });
      // A deleted user leaves the organization's groups.
      await trx(GROUP_MEMBERS)
        .where({ user_id: userId })
        .whereIn('group_id', trx(GROUPS).where({ organization_id: organizationId }).select('id'))
        .delete();
    },
    async revokeApiKeys(userId, organizationId, at) {
      const ids = (await trx('identity_api_keys')
        .where({ user_id: userId, organization_id: organizationId })
        .whereNull('revoked_at')
        .pluck('id')) as string[];
      if (ids.length > 0) await trx('identity_api_keys').whereIn('id', ids).update({ revoked_at: at });
      return ids;
    },
    async endUserSessionsAndTokens(userId, at) {
      const ids = (await trx('identity_sessions').where({ user_id: userId }).whereNull('revoked_at').pluck('id')) as string[];
      if (ids.length > 0) {
        await trx('identity_sessions')
          .whereIn('id', ids)
          .whereNull('revoked_at')
          .update({ revoked_at: at, revoked_reason: 'revoked-all' });
        for (const id of ids) await writeRevocation(trx, 'session', id, new Date(at), { all: true });
      }
      await writeRevocation(trx, 'user', userId, new Date(at));
      return ids;
    },
    async existingUsers(organizationId, userIds) {
      if (userIds.length === 0) return [];
      const found = new Set<string>();
      // Chunks keep the statement under SQLite's variable limit.
      for (let index = 0; index < userIds.length; index += 500) {
        const chunk = userIds.slice(index, index + 500);
        const rows = (await usersQuery(trx, organizationId).whereIn('m.user_id', chunk).pluck('m.user_id')) as string[];
        for (const id of rows) found.add(id);
      }
      return userIds.filter((id) => found.has(id));
    },
    async groupByName(organizationId, displayNameKey) {
      const row = await trx(GROUPS).where({ organization_id: organizationId, display_name_key: displayNameKey }).first('id');
      return row ? { id: row.id } : undefined;
    },
    async groupOf(organizationId, groupId) {
      const row = await trx(GROUPS).where({ organization_id: organizationId, id: groupId }).first('id', 'display_name_key');
      return row ? { id: row.id, displayNameKey: row.display_name_key } : undefined;
    },
    async insertGroup(group) {
      await trx(GROUPS).insert({
        id: group.id,
        organization_id: group.organizationId,
        display_name: group.displayName,
        display_name_key: group.displayName.toLowerCase(),
        external_id: group.externalId,
        created_at: group.at,
        updated_at: group.at,
      });
    },
    async updateGroup(groupId, group) {
      await trx(GROUPS).where({ id: groupId }).update({
        display_name: group.displayName,
        display_name_key: group.displayName.toLowerCase(),
        external_id: group.externalId,
        updated_at: group.at,
      });
    },
    async deleteGroup(groupId) {
      await trx(GROUPS).where({ id: groupId }).delete();
    },
    async groupMemberIds(groupId) {
      return (await trx(GROUP_MEMBERS).where({ group_id: groupId }).pluck('user_id')) as string[];
    },
    async setGroupMembers(groupId, add, remove) {
      for (let index = 0; index < remove.length; index += 500) {
        await trx(GROUP_MEMBERS)
          .where({ group_id: groupId })
          .whereIn('user_id', remove.slice(index, index + 500))
          .delete();
      }
      for (let index = 0; index < add.length; index += 200) {
        await trx(GROUP_MEMBERS).insert(add.slice(index, index + 200).map((userId) => ({ group_id: groupId, user_id: userId })));
      }
    },
    async roleMappings(organizationId) {
      const rows: Row[] = await trx(MAPPINGS).where({ organization_id: organizationId }).select('group_name_key', 'roles');
      return new Map(rows.map((row) => [row.group_name_key, parseJson<string[]>(row.roles, [])]));
    },
    async groupNamesOf(organizationId, userId) {
      return (await trx(`${GROUP_MEMBERS} as gm`)
        .join(`${GROUPS} as g`, 'g.id', 'gm.group_id')
        .where({ 'g.organization_id': organizationId, 'gm.user_id': userId })
        .pluck('g.display_name_key')) as string[];
    },
    async membersOfGroupsNamed(organizationId, displayNameKeys) {
      if (displayNameKeys.length === 0) return [];
      return (await trx(`${GROUP_MEMBERS} as gm`)
        .join(`${GROUPS} as g`, 'g.id', 'gm.group_id')
        .where('g.organization_id', organizationId)
        .whereIn('g.display_name_key', [...displayNameKeys])
        .distinct('gm.user_id')
        .pluck('gm.user_id')) as string[];
    },
    async replaceRoleMappings(organizationId, mappings, at) {
      await trx(MAPPINGS).where({ organization_id: organizationId }).delete();
      if (mappings.length > 0) {
        await trx(MAPPINGS).insert(
          mappings.map((mapping) => ({
            organization_id: organizationId,
            group_name_key: mapping.group.toLowerCase(),
            group_name: mapping.group,
            roles: JSON.stringify(mapping.roles),
            updated_at: at,
          })),
        );
      }
    },
    async customRoleNames(organizationId) {
      return new Set((await trx('identity_roles').where({ organization_id: organizationId }).pluck('name')) as string[]);
    },
    async insertToken(token) {
      await trx(TOKENS).insert({
        id: token.id,
        organization_id: token.organizationId,
        name: token.name,
        prefix: token.prefix,
        token_hash: token.tokenHash,
        created_by_user_id: token.createdByUserId,
        created_at: token.at,
        last_used_at: null,
        revoked_at: null,
      });
    },
    async revokeToken(organizationId, tokenId, at) {
      const live = trx(TOKENS).where({ id: tokenId, organization_id: organizationId }).whereNull('revoked_at');
      const row: Row | undefined = await live.clone().first('name');
      if (!row) return undefined;
      // The read names the token; the conditional update decides who revoked it.
      return (await live.update({ revoked_at: at })) === 1 ? { name: String(row.name) } : undefined;
    },
  };
}

/** Options of {@link createKnexScimStore}. */
export interface KnexScimStoreOptions extends KnexEffectsOptions {
  /**
   * Users by id (through the users cache): the unfiltered `Users` list takes
   * its users' addresses and names from it rather than joining them.
   */
  readonly users: Pick<UsersStore, 'findMany'>;
}

/**
 * The knex {@link ScimStore} over the SCIM tables (migration 0012) and the
 * users, memberships, API keys and sessions tables.
 *
 * @example
 * const store = createKnexScimStore({ db, outbox, invalidator, users: usersStore });
 */
export function createKnexScimStore(options: KnexScimStoreOptions): ScimStore {
  const { db, users } = options;
  return {
    ...knexUnitOfWork(options, scimWrites),

    async resolveToken(tokenHash, now) {
      const [row] = await selectRows(db, RESOLVE_TOKEN_SQL, [tokenHash]);
      if (!row) return undefined;
      const [id, organizationId, name, lastUsedAt] = row;
      const lastUsed = toIsoOrNull(lastUsedAt);
      if (lastUsed === null || new Date(now).getTime() - new Date(lastUsed).getTime() >= TOUCH_INTERVAL_MS) {
        await db(TOKENS).where({ id }).update({ last_used_at: now });
      }
      return { organizationId: String(organizationId), tokenId: String(id), name: String(name) };
    },
    async listTokens(organizationId) {
      const rows: Row[] = await db(TOKENS)
        .where({ organization_id: organizationId })
        .whereNull('revoked_at')
        .orderBy([
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ])
        .select('id', 'name', 'prefix', 'created_at', 'last_used_at');
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        prefix: row.prefix,
        createdAt: toIso(row.created_at),
        lastUsedAt: toIsoOrNull(row.last_used_at),
      }));
    },
    async countTokens(organizationId) {
      const row = (await db(TOKENS)
        .where({ organization_id: organizationId })
        .whereNull('revoked_at')
        .count({ n: '*' })
        .first()) as Row;
      return Number(row?.n ?? 0);
    },
    async isPlatformAdministrator(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId, 'm.status': 'active', 'o.status': 'active' })
        .andWhere('o.is_platform', true)
        .whereIn('r.role', ADMIN_ROLES)
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async organizationExists(organizationId) {
      return (await db('identity_organizations').where({ id: organizationId }).first('id')) !== undefined;
    },
    async listUsers(organizationId, filter, page) {
      // Without a filter (what directories ask most): fixed statements, the total without counting the members.
      const { total, rows } = filter
        ? await filteredPage(() => usersQuery(db, organizationId), filter, USER_FIELDS, page, {
            // The order of the index on (organization_id, created_at, id): a page is read from it, not sorted.
            order: ['m.created_at', 'm.id'],
            columns: USER_COLUMNS,
          })
        : await unfilteredUsersPage(db, organizationId, page, users);
      if (rows.length === 0) return { total, records: [] };
      // Groups are read for the users in any (all of them when the page did not say: a filtered page).
      const grouped = rows.filter((row) => row.in_groups === undefined || Boolean(Number(row.in_groups)));
      const groups = await groupsOfUsers(
        db,
        organizationId,
        grouped.map((row) => row.id),
      );
      return { total, records: rows.map((row) => userFromRow(row, groups.get(row.id) ?? [])) };
    },
    async findUser(organizationId, userId) {
      const row = await usersQuery(db, organizationId).where('m.user_id', userId).first(USER_COLUMNS);
      if (!row) return undefined;
      const groups = await groupsOfUsers(db, organizationId, [userId]);
      return userFromRow(row, groups.get(userId) ?? []);
    },
    async listGroups(organizationId, filter, page, withMembers) {
      const { total, rows } = await filteredPage(
        () => db(`${GROUPS} as g`).where('g.organization_id', organizationId),
        filter,
        GROUP_FIELDS,
        page,
        { order: ['g.created_at', 'g.id'], columns: ['g.id', 'g.display_name', 'g.external_id', 'g.created_at', 'g.updated_at'] },
      );
      if (rows.length === 0) return { total, records: [] };
      const members = withMembers
        ? await membersOfGroups(
            db,
            rows.map((row) => row.id),
          )
        : undefined;
      return { total, records: rows.map((row) => groupFromRow(row, members?.get(row.id))) };
    },
    async findGroup(organizationId, groupId, withMembers) {
      const row = await db(`${GROUPS} as g`)
        .where({ 'g.organization_id': organizationId, 'g.id': groupId })
        .first('g.id', 'g.display_name', 'g.external_id', 'g.created_at', 'g.updated_at');
      if (!row) return undefined;
      const members = withMembers ? await membersOfGroups(db, [groupId]) : undefined;
      return groupFromRow(row, members?.get(groupId));
    },
    async listRoleMappings(organizationId) {
      const rows: Row[] = await db(MAPPINGS)
        .where({ organization_id: organizationId })
        .orderBy('group_name_key')
        .select('group_name', 'roles');
      return rows.map((row) => ({ group: row.group_name, roles: parseJson<string[]>(row.roles, []) }));
    },
  };
}
