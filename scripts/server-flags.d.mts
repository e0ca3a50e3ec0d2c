/** The Node.js flags the reference server runs with (see server-flags.mjs). */
export declare const SERVER_NODE_FLAGS: readonly string[];
