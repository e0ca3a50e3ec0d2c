import { dialectOf, type Migration } from '@idt/core/knex';

/**
 * Lists that stay fast at 100,000 members:
 *
 * - `identity_memberships(organization_id, created_at, id)`: the users list
 *   of an organization reads its page in membership order straight from the
 *   index (no sort), and a keyset cursor seeks into it.
 * - `identity_organization_counts`: the number of memberships per
 *   organization, kept by triggers on `identity_memberships` in the
 *   transaction of every insert, delete or move, whoever writes the row (the
 *   API, the seed command, a bulk import in SQL). A list's `totalCount` is one
 *   primary-key read instead of a count over the organization's memberships.
 */
export const memberCountsMigration: Migration = {
  name: '0005_member_counts',
  async up(db) {
    await db.schema.alterTable('identity_memberships', (t) => {
      t.index(['organization_id', 'created_at', 'id'], 'identity_memberships_org_created_id_index');
    });
    await db.schema.createTable('identity_organization_counts', (t) => {
      t.string('organization_id', 36).primary().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.integer('members').notNullable().defaultTo(0);
    });
    await db.raw(`
      insert into identity_organization_counts (organization_id, members)
      select organization_id, count(*) from identity_memberships group by organization_id`);
    if (dialectOf(db) === 'postgres') {
      await db.raw(`
        create function identity_count_members() returns trigger language plpgsql as $$
        begin
          if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.organization_id is distinct from old.organization_id) then
            insert into identity_organization_counts (organization_id, members) values (new.organization_id, 1)
              on conflict (organization_id) do update set members = identity_organization_counts.members + 1;
          end if;
          if tg_op = 'DELETE' or (tg_op = 'UPDATE' and new.organization_id is distinct from old.organization_id) then
            update identity_organization_counts set members = members - 1 where organization_id = old.organization_id;
          end if;
          return null;
        end $$`);
      await db.raw(`
        create trigger identity_memberships_count
        after insert or delete or update of organization_id on identity_memberships
        for each row execute function identity_count_members()`);
      return;
    }
    const increment = (column: 'new') => `
      insert into identity_organization_counts (organization_id, members) values (${column}.organization_id, 1)
        on conflict (organization_id) do update set members = members + 1;`;
    const decrement = (column: 'old') => `
      update identity_organization_counts set members = members - 1 where organization_id = ${column}.organization_id;`;
    await db.raw(`
      create trigger identity_memberships_count_insert after insert on identity_memberships
      begin ${increment('new')} end`);
    await db.raw(`
      create trigger identity_memberships_count_delete after delete on identity_memberships
      begin ${decrement('old')} end`);
    await db.raw(`
      create trigger identity_memberships_count_move after update of organization_id on identity_memberships
      when new.organization_id is not old.organization_id
      begin ${increment('new')} ${decrement('old')} end`);
  },
  async down(db) {
    if (dialectOf(db) === 'postgres') {
      await db.raw('drop trigger if exists identity_memberships_count on identity_memberships');
      await db.raw('drop function if exists identity_count_members()');
    } else {
      for (const name of ['insert', 'delete', 'move']) await db.raw(`drop trigger if exists identity_memberships_count_${name}`);
    }
    await db.schema.dropTableIfExists('identity_organization_counts');
    await db.schema.alterTable('identity_memberships', (t) => {
      t.dropIndex(['organization_id', 'created_at', 'id'], 'identity_memberships_org_created_id_index');
    });
  },
};
