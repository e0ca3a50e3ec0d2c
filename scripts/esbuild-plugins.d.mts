import type { Plugin } from 'esbuild';

/** Leaves npm dependencies as imports resolved to absolute paths at build time; bundles the workspace packages. */
export declare const externalNpmDependencies: Plugin;
