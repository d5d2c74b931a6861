/**
 * Energy attribution to processes, cgroups, Slurm jobs and containers (docs/attribution.md).
 * The engine splits measured energy; the consumers read kernel files; `attributeReadings` turns
 * two readings into shares.
 */
export * from './cgroup.js';
export * from './consumers.js';
export * from './container.js';
export * from './cpu-time.js';
export * from './discover.js';
export * from './engine.js';
export * from './gpu-binding.js';
export * from './gpu-use.js';
export * from './interval.js';
export * from './kernel-files.js';
export * from './meter.js';
export * from './proc-stat.js';
export * from './process-tree.js';
export * from './run.js';
export * from './slurm.js';
export * from './summary.js';
export * from './totals.js';
