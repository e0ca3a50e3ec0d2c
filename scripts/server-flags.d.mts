/** The Node.js flags the reference server runs with (see server-flags.mjs). */
export declare const SERVER_NODE_FLAGS: readonly string[];

/** The environment variables the reference server starts with, where the environment does not set them (see server-flags.mjs). */
export declare const SERVER_ENV: Readonly<Record<string, string>>;
