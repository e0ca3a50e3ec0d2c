/**
 * A plain oidc-provider storage adapter over one knex table, the generic
 * shape people write for SQL databases: every model (Client, Session,
 * AccessToken, Grant, …) in one table keyed by (model, id), the payload as
 * JSON text, and columns for the lookups the provider makes (uid, user
 * code, grant id). Used by bench/baseline-oidc.mjs for the stock
 * oidc-provider baseline over SQLite and PostgreSQL.
 */

/** Creates the adapter's table unless it exists. */
export async function createAdapterTable(db, table) {
  if (await db.schema.hasTable(table)) return;
  await db.schema.createTable(table, (t) => {
    t.string('model', 40).notNullable();
    t.string('id', 255).notNullable();
    t.text('payload').notNullable();
    t.string('grant_id', 255);
    t.string('user_code', 255);
    t.string('uid', 255);
    t.bigInteger('expires_at');
    t.bigInteger('consumed_at');
    t.primary(['model', 'id']);
    t.index(['grant_id']);
    t.index(['uid']);
    t.index(['user_code']);
  });
}

/** Stores clients' metadata as `Client` payloads (what a dynamic-registration store holds), in batches. */
export async function storeClients(db, table, clients) {
  const rows = clients.map((metadata) => ({
    model: 'Client',
    id: metadata.client_id,
    payload: JSON.stringify(metadata),
    grant_id: null,
    user_code: null,
    uid: null,
    expires_at: null,
    consumed_at: null,
  }));
  await db.transaction(async (trx) => {
    // SQLite's multi-row insert is a compound SELECT of at most 500 terms.
    for (let start = 0; start < rows.length; start += 400) {
      await trx(table)
        .insert(rows.slice(start, start + 400))
        .onConflict(['model', 'id'])
        .merge();
    }
  });
}

function toPayload(row) {
  if (!row) return undefined;
  if (row.expires_at !== null && row.expires_at !== undefined && Number(row.expires_at) <= Date.now()) return undefined;
  const payload = JSON.parse(row.payload);
  if (row.consumed_at !== null && row.consumed_at !== undefined) payload.consumed = Math.floor(Number(row.consumed_at) / 1000);
  return payload;
}

/** The adapter class oidc-provider instantiates once per model name. */
export function knexAdapter(db, table) {
  const columns = ['payload', 'expires_at', 'consumed_at'];
  return class KnexAdapter {
    constructor(model) {
      this.model = model;
    }

    async upsert(id, payload, expiresIn) {
      await db(table)
        .insert({
          model: this.model,
          id,
          payload: JSON.stringify(payload),
          grant_id: payload.grantId ?? null,
          user_code: payload.userCode ?? null,
          uid: payload.uid ?? null,
          expires_at: expiresIn ? Date.now() + expiresIn * 1000 : null,
          consumed_at: null,
        })
        .onConflict(['model', 'id'])
        .merge();
    }

    async find(id) {
      return toPayload(await db(table).where({ model: this.model, id }).first(columns));
    }

    async findByUid(uid) {
      return toPayload(await db(table).where({ model: this.model, uid }).first(columns));
    }

    async findByUserCode(userCode) {
      return toPayload(await db(table).where({ model: this.model, user_code: userCode }).first(columns));
    }

    async consume(id) {
      await db(table).where({ model: this.model, id }).update({ consumed_at: Date.now() });
    }

    async destroy(id) {
      await db(table).where({ model: this.model, id }).delete();
    }

    async revokeByGrantId(grantId) {
      await db(table).where({ grant_id: grantId }).delete();
    }
  };
}
