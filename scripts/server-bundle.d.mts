/** What stays out of the reference server's bundle (see server-bundle.mjs). */
export declare const SERVER_BUNDLE_EXTERNAL: readonly string[];
/** The import specifiers that stay out of the reference server's bundle: an external module or a path inside one. */
export declare const SERVER_BUNDLE_EXTERNAL_IMPORT: RegExp;
/** The reference server's bundle options, for esbuild and tsup alike (see server-bundle.mjs). */
export declare const SERVER_BUNDLE_OPTIONS: {
  readonly external: string[];
  readonly banner: { readonly js: string };
  readonly minifyWhitespace: boolean;
};
