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
