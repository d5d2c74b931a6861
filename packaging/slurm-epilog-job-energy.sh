#!/bin/sh
# Slurm epilog: writes a job's energy (every node's, and the job's own share of it, from the
# joulegate exporters' counters in Prometheus) to slurm-<jobid>.energy.txt.
#
# Two ways to install it in slurm.conf (docs/slurm.md; packages ship it as
# /usr/share/joulegate/slurm/slurm-epilog-job-energy.sh):
#   Epilog=<this script>           (runs as root on each node: the file goes into the job's working directory, written as the job's user, or
#       into JOULEGATE_JOB_REPORT_DIR). With several nodes, every node writes the same report.
#   EpilogSlurmctld=<this script>  (runs once per job on the
#       controller as SlurmUser, who cannot write as the job's user: the file goes into
#       JOULEGATE_JOB_REPORT_DIR, which SlurmUser must be able to write; without it nothing is written).
#
# Settings, in /etc/default/joulegate-job-energy (or the file JOULEGATE_JOB_ENERGY_CONFIG names):
#   JOULEGATE_PROMETHEUS      Prometheus base URL (required), e.g. http://prometheus:9090
#   JOULEGATE_JOB_REPORT_DIR  directory for slurm-<jobid>.energy.txt (default: the job's working
#                             directory, written as the job's user; required for EpilogSlurmctld)
#   JOULEGATE_SCRAPE_WAIT     seconds to wait so the scrape after the job's end is stored (default 20)
#   JOULEGATE_REPORT_TIMEOUT  seconds the report may take, Prometheus query included (default 60)
#   JOULEGATE_JOB_ENERGY_LOG  a file to log to (default: syslog through logger, else stderr)
#   JOULEGATE_BIN             the joulegate command (default: joulegate on PATH)
#
# The epilog never fails or holds the node: it checks its settings, starts the report writer
# detached (its own session, so Slurm neither waits for it nor kills it) and exits 0 at once.
# Every problem, here or in the writer, is one log line; the exit status is always 0.
set -u
PATH=${PATH:+$PATH:}/usr/local/bin:/usr/bin:/bin
config=${JOULEGATE_JOB_ENERGY_CONFIG:-/etc/default/joulegate-job-energy}
# shellcheck disable=SC1090
[ -r "$config" ] && . "$config"
job=${SLURM_JOB_ID:-}

log() {
  line="joulegate-job-energy: job ${job:-?}: $*"
  if [ -n "${JOULEGATE_JOB_ENERGY_LOG:-}" ]; then
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$line" >>"$JOULEGATE_JOB_ENERGY_LOG" 2>/dev/null && return
  fi
  logger -t joulegate-job-energy -- "$line" 2>/dev/null || printf '%s\n' "$line" >&2
}

# The writer (started below, detached): the report, then the file, bounded in time.
write_report() {
  info=$(scontrol show job -o "$job" 2>&1) || {
    log "scontrol show job failed: $(printf '%s' "$info" | tail -n 1); no energy report"
    return
  }
  field() { printf '%s\n' "$info" | sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" | head -n 1; }
  workdir=$(field WorkDir)
  owner=$(printf '%s\n' "$info" | sed -n 's/.*[[:space:]]UserId=\([^([:space:]]*\).*/\1/p' | head -n 1)
  out_dir=${JOULEGATE_JOB_REPORT_DIR:-$workdir}
  if [ -z "$out_dir" ]; then
    log "no working directory from scontrol and no JOULEGATE_JOB_REPORT_DIR; no energy report"
    return
  fi
  sleep "${JOULEGATE_SCRAPE_WAIT:-20}"
  report=$(timeout -k 5 "${JOULEGATE_REPORT_TIMEOUT:-60}" "${JOULEGATE_BIN:-joulegate}" job-report \
    --prometheus "$JOULEGATE_PROMETHEUS" --slurm-job "$job" --format text 2>&1) || {
    log "job-report failed: $(printf '%s' "$report" | tr '\n' ' ' | cut -c1-300)"
    return
  }
  target="$out_dir/slurm-$job.energy.txt"
  # Written whole or not at all: a temporary file renamed over the target.
  put='cat >"$1.tmp" && mv -f "$1.tmp" "$1" || { rm -f "$1.tmp"; exit 1; }'
  if [ -z "${JOULEGATE_JOB_REPORT_DIR:-}" ] && [ "$(id -u)" = 0 ] && [ -n "$owner" ]; then
    # Into the job's own directory as the job's user: never as root into a user's tree.
    printf '%s\n' "$report" | setpriv --reuid "$owner" --regid "$(id -g "$owner")" --init-groups \
      sh -c "$put" sh "$target" 2>/dev/null || { log "cannot write $target as $owner"; return; }
  else
    printf '%s\n' "$report" | sh -c "$put" sh "$target" 2>/dev/null || { log "cannot write $target"; return; }
  fi
  log "wrote $target"
}

if [ "${1:-}" = --writer ]; then
  write_report
  exit 0
fi
if [ -z "$job" ]; then
  log "SLURM_JOB_ID is not set (not run by Slurm?); no energy report"
  exit 0
fi
if [ -z "${JOULEGATE_PROMETHEUS:-}" ]; then
  log "JOULEGATE_PROMETHEUS is not set in $config; no energy report"
  exit 0
fi
if [ "$(id -u)" != 0 ] && [ -z "${JOULEGATE_JOB_REPORT_DIR:-}" ]; then
  log "running as $(id -un) (EpilogSlurmctld?), who cannot write as the job's user: set JOULEGATE_JOB_REPORT_DIR; no energy report"
  exit 0
fi
# The writer gets a session of its own. Slurm kills the epilog's process group when the epilog
# exits, so the epilog waits (at most 5 s) until the writer has left that group.
setsid sh "$0" --writer </dev/null >/dev/null 2>&1 &
writer=$!
group() { ps -o pgid= -p "$1" 2>/dev/null | tr -d ' '; }
tries=0
while [ "$(group "$writer")" = "$(group $$)" ] && [ "$tries" -lt 50 ]; do
  sleep 0.1
  tries=$((tries + 1))
done
exit 0
