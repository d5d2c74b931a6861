import { PACKAGE } from './package-root.js';

/** The package version, from the nearest joulegate package.json above this module. */
export const VERSION = PACKAGE?.version ?? '0.0.0';
