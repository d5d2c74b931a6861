#!/usr/bin/env node
// Builds the Debian package (docs/packaging.md) from the built tree: `npm run package:deb`
// (build first), or `node scripts/package-deb.mjs [--out DIR]` after `npm run build`.
// The app goes to /usr/lib/joulegate (the bundles, bin/, python/ and the run-time node_modules
// for this machine's architecture), its commands are links in /usr/bin, and the system files go
// where Debian's systemd and D-Bus read them. Prints the path of the .deb it wrote.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

const repo = join(dirname(new URL(import.meta.url).pathname), '..');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const outIndex = process.argv.indexOf('--out');
const outDir = outIndex > 0 ? process.argv[outIndex + 1] : repo;
/** Node's oldest release line joulegate supports (package.json "engines"), as the dependency. */
const nodeMinimum = /^>=\s*(\d+)/.exec(pkg.engines.node)?.[1];
if (!nodeMinimum) throw new Error(`package-deb: engines.node "${pkg.engines.node}" is not ">=N"`);

const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
const APP = 'usr/lib/joulegate';
const stage = mkdtempSync(join(tmpdir(), 'joulegate-deb-'));
const root = join(stage, 'root');
const at = (path) => join(root, path);
const put = (from, to, mode = 0o644) => {
  mkdirSync(dirname(at(to)), { recursive: true });
  cpSync(join(repo, from), at(to));
  chmodSync(at(to), mode);
};
const write = (to, text, mode = 0o644) => {
  mkdirSync(dirname(at(to)), { recursive: true });
  writeFileSync(at(to), text);
  chmodSync(at(to), mode);
};

try {
  if (!statSync(join(repo, 'dist/app/joulegate.cjs'), { throwIfNoEntry: false }))
    throw new Error('package-deb: dist/ is not built (npm run build)');

  // --- The app ---------------------------------------------------------------------------------
  // dist/ without type declarations and source maps (nothing reads them at run time).
  cpSync(join(repo, 'dist'), at(`${APP}/dist`), {
    recursive: true,
    filter: (src) => !/\.d\.ts$|\.map$/.test(src),
  });
  cpSync(join(repo, 'bin'), at(`${APP}/bin`), { recursive: true });
  // Byte code left by a run from the checkout, and the file that keeps it out of npm's package.
  cpSync(join(repo, 'python'), at(`${APP}/python`), {
    recursive: true,
    filter: (src) => !src.includes('__pycache__') && !src.endsWith('/.npmignore'),
  });
  // version.ts reads name and version; "type" makes dist/**/*.js ES modules.
  write(
    `${APP}/package.json`,
    `${JSON.stringify({ name: pkg.name, version: pkg.version, type: 'module', license: pkg.license, private: true }, null, 2)}\n`,
  );
  // The run-time dependencies as npm installed them here (this machine's koffi binary).
  const modules = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((p) => p.startsWith(join(repo, 'node_modules/')));
  for (const dir of modules) {
    cpSync(dir, at(`${APP}/${relative(repo, dir)}`), {
      recursive: true,
      // Debian's libc is glibc (koffi's musl build would link a libc Debian does not have);
      // h5wasm's Node build is imported ('h5wasm/node'); npm's own files and tests are not needed.
      filter: (src) => !/\/musl_[^/]*$|\/h5wasm\/(dist\/(esm|iife)|test)$|\/\.npmignore$/.test(src),
    });
  }
  // Nothing in the package is writable by others or group.
  execFileSync('chmod', ['-R', 'u+rwX,go=rX', at(APP)]);
  for (const f of [
    'bin/joulegate',
    'bin/geopmread',
    'bin/geopmwrite',
    'bin/geopmsession',
    'bin/geopmaccess',
    'dist/app/joulegated.js',
    'dist/app/joulegate-loader.js',
  ])
    chmodSync(at(`${APP}/${f}`), 0o755);
  const commands = Object.entries(pkg.bin);
  for (const [name, target] of commands) {
    mkdirSync(at('usr/bin'), { recursive: true });
    symlinkSync(`../lib/joulegate/${target}`, at(`usr/bin/${name}`));
  }

  // --- System integration ----------------------------------------------------------------------
  // The units name the commands without a directory (any npm prefix); here they are in /usr/bin.
  for (const unit of ['joulegated.service', 'joulegate-exporter.service']) {
    const text = readFileSync(join(repo, 'packaging', unit), 'utf8').replace(
      /^ExecStart=(joulegated?)\b/m,
      'ExecStart=/usr/bin/$1',
    );
    if (!/^ExecStart=\/usr\/bin\//m.test(text))
      throw new Error(`package-deb: ${unit}: no ExecStart to rewrite`);
    write(`usr/lib/systemd/system/${unit}`, text);
  }
  put('packaging/io.github.geopm.service', 'usr/share/dbus-1/system-services/io.github.geopm.service');
  put('packaging/io.github.geopm.conf', 'usr/share/dbus-1/system.d/io.github.geopm.conf');
  put('packaging/io.github.geopm.xml', 'usr/share/dbus-1/interfaces/io.github.geopm.xml');
  put('packaging/tmpfiles.d/joulegated.conf', 'usr/lib/tmpfiles.d/joulegated.conf');
  put('packaging/sysusers.d/joulegate-exporter.conf', 'usr/lib/sysusers.d/joulegate-exporter.conf');
  put('packaging/default/joulegated', 'etc/default/joulegated');
  put('packaging/default/joulegate-exporter', 'etc/default/joulegate-exporter');
  // Examples an admin copies into Slurm's and Prometheus's configuration.
  put('packaging/slurm-epilog-job-energy.sh', 'usr/share/joulegate/slurm/slurm-epilog-job-energy.sh', 0o755);
  put('packaging/prometheus-joulegate.yml', 'usr/share/joulegate/prometheus/prometheus-joulegate.yml');
  put('packaging/prometheus/joulegate-rules.yml', 'usr/share/joulegate/prometheus/joulegate-rules.yml');
  put(
    'packaging/prometheus/joulegate-rules.test.yml',
    'usr/share/joulegate/prometheus/joulegate-rules.test.yml',
  );
  put('packaging/grafana/joulegate-energy.json', 'usr/share/joulegate/grafana/joulegate-energy.json');

  // --- Debian's own files ----------------------------------------------------------------------
  const doc = 'usr/share/doc/joulegate';
  write(
    `${doc}/copyright`,
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: joulegate
Source: https://github.com/joulegate/joulegate

Files: *
Copyright: the joulegate authors
License: BSD-3-Clause
 On Debian systems the full text of the license is in
 /usr/share/common-licenses/BSD.

Files: usr/lib/joulegate/node_modules/*
Copyright: the authors of each package (see its package.json)
License: various
 The license of each bundled npm package is named in its package.json and, where the
 package ships one, in its LICENSE file beside it.
`,
  );
  const date = new Date(Number(process.env.SOURCE_DATE_EPOCH ?? 0) * 1000 || Date.now())
    .toUTCString()
    .replace('GMT', '+0000');
  writeFileSync(
    at(`${doc}/changelog.gz`),
    gzipSync(
      `joulegate (${pkg.version}) unstable; urgency=medium\n\n  * Built from the npm package ${pkg.name}@${pkg.version} (npm run package:deb).\n\n -- joulegate maintainers <joulegate@users.noreply.github.com>  ${date}\n`,
      { level: 9 },
    ),
  );
  for (const docFile of ['README.md'])
    writeFileSync(at(`${doc}/${docFile}.gz`), gzipSync(readFileSync(join(repo, docFile)), { level: 9 }));

  const debian = join(root, 'DEBIAN');
  mkdirSync(debian);
  const script = (name, body) => {
    writeFileSync(join(debian, name), `#!/bin/sh\nset -e\n${body}`);
    chmodSync(join(debian, name), 0o755);
  };
  // DPKG_ROOT: set when dpkg installs into another root without chroot (the package test, and
  // bootstrapping tools); the host's running systemd is then none of our business.
  script(
    'postinst',
    `if [ "$1" = configure ]; then
\tsystemd-sysusers --root="\${DPKG_ROOT:-/}" joulegate-exporter.conf
\tsystemd-tmpfiles --root="\${DPKG_ROOT:-/}" --create joulegated.conf
\tif [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
\t\tsystemctl --system daemon-reload >/dev/null || true
\tfi
fi
`,
  );
  script(
    'postrm',
    `if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
\tsystemctl --system daemon-reload >/dev/null || true
fi
if [ "$1" = purge ]; then
\t# The exporter's counters across restarts. The user stays (Debian keeps system users), as
\t# do /etc/geopm's access lists, which GEOPM's own service would read too.
\trm -rf "\${DPKG_ROOT:-}/var/lib/joulegate"
fi
`,
  );
  script(
    'prerm',
    `if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ] && [ "$1" = remove ]; then
\tsystemctl --system stop joulegate-exporter.service joulegated.service >/dev/null 2>&1 || true
fi
`,
  );
  writeFileSync(join(debian, 'conffiles'), '/etc/default/joulegate-exporter\n/etc/default/joulegated\n');

  // Shared libraries koffi's binary links (its Node-API symbols come from node itself).
  let shlibs = 'libc6';
  const binaries = execFileSync('find', [at(APP), '-name', '*.node', '-type', 'f'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  if (binaries.length > 0) {
    mkdirSync(join(stage, 'debian'));
    writeFileSync(
      join(stage, 'debian/control'),
      'Source: joulegate\n\nPackage: joulegate\nArchitecture: any\n',
    );
    const r = spawnSync('dpkg-shlibdeps', ['-O', ...binaries.map((b) => `-e${b}`)], {
      cwd: stage,
      encoding: 'utf8',
    });
    const found = /^shlibs:Depends=(.*)$/m.exec(r.stdout ?? '')?.[1];
    if (r.status !== 0 || !found)
      throw new Error(`package-deb: dpkg-shlibdeps failed (Debian package dpkg-dev): ${r.stderr}`);
    shlibs = found;
  }
  const md5sums = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile())
        md5sums.push(`${createHash('md5').update(readFileSync(p)).digest('hex')}  ${relative(root, p)}`);
    }
  };
  for (const top of readdirSync(root)) if (top !== 'DEBIAN') walk(join(root, top));
  writeFileSync(join(debian, 'md5sums'), `${md5sums.sort().join('\n')}\n`);
  const installedKb = Number(
    execFileSync('du', ['-sk', '--exclude=DEBIAN', root], { encoding: 'utf8' }).split('\t')[0],
  );
  writeFileSync(
    join(debian, 'control'),
    `Package: joulegate
Version: ${pkg.version}
Architecture: ${arch}
Maintainer: joulegate maintainers <joulegate@users.noreply.github.com>
Installed-Size: ${installedKb}
Depends: nodejs (>= ${nodeMinimum}), systemd | systemd-standalone-sysusers, ${shlibs}
Recommends: dbus
Section: admin
Priority: optional
Homepage: https://github.com/joulegate/joulegate
Description: energy measurement and control of compute nodes
 joulegate measures the energy of applications and nodes (RAPL, MSR, hwmon,
 NVML, AMD SMI) and serves it: joulegated is a GEOPM-compatible node daemon on
 the system bus (io.github.geopm), joulegate-exporter serves Prometheus, and
 the joulegate command is a perun-compatible energy monitor (joulegate monitor).
`,
  );

  mkdirSync(outDir, { recursive: true });
  const deb = join(outDir, `joulegate_${pkg.version}_${arch}.deb`);
  // Files owned by root whoever builds; xz as Debian's own packages.
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', root, deb], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  process.stdout.write(`${deb}\n`);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
