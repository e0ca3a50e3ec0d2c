import { z } from 'zod';

/** The largest page size; larger requests are clamped to it. */
export const MAX_PAGE_SIZE = 100;

/** `page` (from 1, default 1) and `pageSize` (default 20, clamped to 100) query parameters. */
export const PageQuery = z.object({
  page: z.coerce
    .number({ error: 'Enter a page number.' })
    .int('A page number is a whole number.')
    .min(1, 'Pages start at 1.')
    .max(1_000_000, 'The page number is too large.')
    .default(1),
  pageSize: z.coerce
    .number({ error: 'Enter a page size.' })
    .int('A page size is a whole number.')
    .min(1, 'A page holds at least one item.')
    .default(20)
    .transform((value) => Math.min(value, MAX_PAGE_SIZE)),
});

/** A validated page request. */
export type PageRequest = z.output<typeof PageQuery>;

/** A paged result (SPEC 2.6). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly totalCount: number;
  readonly page: number;
  readonly pageSize: number;
  readonly totalPages: number;
  readonly hasNextPage: boolean;
  readonly hasPreviousPage: boolean;
}

/** One page of rows as a store returns it. */
export interface PageSlice<T> {
  readonly items: readonly T[];
  readonly totalCount: number;
}

/** The schema of a paged result of `item`, for the API document. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    totalCount: z.number().int(),
    page: z.number().int(),
    pageSize: z.number().int(),
    totalPages: z.number().int(),
    hasNextPage: z.boolean(),
    hasPreviousPage: z.boolean(),
  });
}

/** Adds the derived members of a paged result. */
export function toPage<T>(slice: PageSlice<T>, request: PageRequest): Page<T> {
  const totalPages = Math.ceil(slice.totalCount / request.pageSize);
  return {
    items: slice.items,
    totalCount: slice.totalCount,
    page: request.page,
    pageSize: request.pageSize,
    totalPages,
    hasNextPage: request.page < totalPages,
    hasPreviousPage: request.page > 1,
  };
}

/** Where a keyset page starts: the page number it is, and the sort key of the row before it. */
export interface PageCursor {
  readonly page: number;
  readonly after: readonly string[];
}

/** Encodes a {@link PageCursor} as the opaque `cursor` of the next page. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(JSON.stringify([cursor.page, ...cursor.after]), 'utf8').toString('base64url');
}

/** Decodes a `cursor` query parameter; `undefined` when it is not one this server wrote. */
export function decodeCursor(value: string): PageCursor | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length < 2 || parsed.length > 4) return undefined;
    const [page, ...after] = parsed as unknown[];
    if (!Number.isInteger(page) || (page as number) < 2 || (page as number) > 1_000_000) return undefined;
    if (!after.every((part) => typeof part === 'string' && part.length > 0 && part.length <= 64)) return undefined;
    return { page: page as number, after: after as string[] };
  } catch {
    return undefined;
  }
}

/**
 * {@link PageQuery} plus `cursor`, the `nextCursor` of the previous page: a
 * keyset page that costs the same at page 2,000 as at page 1. With a
 * cursor, `page` is taken from it.
 */
export const CursorPageQuery = PageQuery.extend({
  cursor: z
    .string()
    .max(300, 'This is not a cursor this server wrote.')
    .transform((value, context) => {
      const cursor = decodeCursor(value);
      if (!cursor) {
        context.addIssue({ code: 'custom', message: 'This is not a cursor this server wrote: pass nextCursor as it came.' });
        return z.NEVER;
      }
      return cursor;
    })
    .optional(),
});

/** A validated keyset page request. */
export type CursorPageRequest = z.output<typeof CursorPageQuery>;

/** A paged result (SPEC 2.6) with the cursor of the next page (`null` on the last). */
export interface CursorPage<T> extends Page<T> {
  readonly nextCursor: string | null;
}

/** One keyset page of rows as a store returns it: `next` is the sort key of its last row when more follow. */
export interface CursorPageSlice<T> extends PageSlice<T> {
  readonly next?: readonly string[];
}

/** The schema of a {@link CursorPage} of `item`, for the API document. */
export function cursorPageSchema<T extends z.ZodType>(item: T) {
  return pageSchema(item).extend({
    nextCursor: z
      .string()
      .nullable()
      .describe('Pass as `cursor` to read the next page at constant cost; `null` on the last page.'),
  });
}

/** Adds the derived members and `nextCursor` to a keyset page. */
export function toCursorPage<T>(slice: CursorPageSlice<T>, request: CursorPageRequest): CursorPage<T> {
  const page = request.cursor?.page ?? request.page;
  const result = toPage(slice, { page, pageSize: request.pageSize });
  return {
    ...result,
    nextCursor: slice.next && result.hasNextPage ? encodeCursor({ page: page + 1, after: slice.next }) : null,
  };
}
