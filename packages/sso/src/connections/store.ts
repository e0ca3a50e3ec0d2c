import type { UnitOfWork } from '@idt/core';
import type { ConnectionRecord } from './records.js';

/**
 * The connection primitives the service runs in one transaction. None of
 * them publishes events: the service does, through the transaction's
 * effects. `organizationId` is `null` for platform connections; a row of
 * another scope does not exist for a primitive.
 */
export interface ConnectionsWrites {
  /** The connection in its scope, read inside the transaction. */
  find(organizationId: string | null, id: string): Promise<ConnectionRecord | undefined>;
  insert(connection: ConnectionRecord): Promise<void>;
  /** Rewrites the connection (secret sealed again); `false` when it is gone. */
  update(connection: ConnectionRecord): Promise<boolean>;
  /** `false` when no row of that scope had the id. */
  delete(organizationId: string | null, id: string): Promise<boolean>;
}

/**
 * Persistence of connections. The client secret of an OIDC connection is
 * sealed at rest (AES-GCM under a key derived from the server secret, the
 * connection id as associated data) and opened on read.
 */
export interface ConnectionsStore extends UnitOfWork<ConnectionsWrites> {
  /** The connections of an organization, or the platform's with `null`; oldest first. */
  list(organizationId: string | null): Promise<ConnectionRecord[]>;
  find(organizationId: string | null, id: string): Promise<ConnectionRecord | undefined>;
  /** A connection by id whatever its scope (the public SAML routes). */
  findById(id: string): Promise<ConnectionRecord | undefined>;
}
