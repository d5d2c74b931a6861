/**
 * Start-up of the one-shot commands alone (read, write, session, access, geopm*), bundled into
 * dist/app/joulegate-tools.cjs: a quarter of the whole CLI's bundle, which the loader runs for
 * these commands (docs/cli.md, "Start-up").
 */
import { mainOneShot } from '../cli/one-shot.js';
import { startCli } from './cli-start.js';

startCli(mainOneShot);
