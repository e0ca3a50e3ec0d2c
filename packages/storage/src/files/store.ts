/** A stored file's metadata row. */
export interface StoredFileRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly bucket: string;
  readonly fileName: string;
  readonly contentType: string;
  readonly sizeBytes: number;
  readonly path: string | null;
  readonly isPublic: boolean;
  readonly uploadedBy: string;
  /** ISO 8601 UTC. */
  readonly uploadedAt: string;
  /** Where the bytes are in the blob store. */
  readonly blobKey: string;
}

/** Persistence of file metadata, scoped to one organization per call. */
export interface FilesStore {
  /** Records a file, creating its bucket in the organization when it is the bucket's first file (race-safe). */
  insert(file: StoredFileRecord): Promise<void>;
  find(organizationId: string, id: string): Promise<StoredFileRecord | undefined>;
  /**
   * A page of a bucket's files, newest first; with `path`, only files in
   * that folder or below it.
   */
  list(
    organizationId: string,
    query: { bucket: string; path: string | null; page: number; pageSize: number },
  ): Promise<{ items: StoredFileRecord[]; totalCount: number }>;
  /** Deletes a file's row and returns it; of concurrent deletes exactly one gets the row. */
  remove(organizationId: string, id: string): Promise<StoredFileRecord | undefined>;
}
