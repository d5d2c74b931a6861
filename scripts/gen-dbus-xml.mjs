#!/usr/bin/env node
// Writes packaging/io.github.geopm.xml from the interface table (src/ipc/dbus/interface.ts,
// compiled to dist/). test/service/methods.test.ts checks the file matches.
import { writeFileSync } from 'node:fs';
import { introspectionXml } from '../dist/ipc/dbus/interface.js';

writeFileSync(new URL('../packaging/io.github.geopm.xml', import.meta.url), introspectionXml());
