#!/bin/sh
# Slurm epilog: writes the job's energy (every node, from Prometheus) next to its output.
# Install: Epilog=/etc/slurm/epilog.d/job-energy.sh in slurm.conf (or EpilogSlurmctld= to run it
# once per job on the controller, which is preferable: the report covers all nodes). Settings in
# /etc/default/joulegate-job-energy:
#   JOULEGATE_PROMETHEUS  Prometheus base URL (required), e.g. http://prometheus:9090
#   JOULEGATE_JOB_REPORT_DIR  directory for <jobid>.energy.txt (default: the job's working
#                         directory, written as the job's user)
#   JOULEGATE_SCRAPE_WAIT seconds to wait so the last scrape after the job's end is stored (default 20)
# An epilog must not fail the node: every problem is logged and the script exits 0.
set -u
[ -r /etc/default/joulegate-job-energy ] && . /etc/default/joulegate-job-energy
: "${JOULEGATE_PROMETHEUS:?set JOULEGATE_PROMETHEUS in /etc/default/joulegate-job-energy}"
JOB=${SLURM_JOB_ID:?not run by Slurm}
log() { logger -t joulegate-job-energy "job $JOB: $*" 2>/dev/null || echo "joulegate-job-energy: job $JOB: $*" >&2; }

# The job's nodes and times from Slurm (the epilog's environment has the node list; times come
# from scontrol as ISO local time, which job-report reads).
info=$(scontrol show job "$JOB" 2>/dev/null)
nodes=${SLURM_JOB_NODELIST:-$(printf '%s\n' "$info" | sed -n 's/.* NodeList=\([^ ]*\).*/\1/p' | head -n1)}
start=$(printf '%s\n' "$info" | sed -n 's/.*StartTime=\([^ ]*\).*/\1/p' | head -n1)
end=$(printf '%s\n' "$info" | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p' | head -n1)
workdir=$(printf '%s\n' "$info" | sed -n 's/.*WorkDir=\([^ ]*\).*/\1/p' | head -n1)
owner=$(printf '%s\n' "$info" | sed -n 's/.*UserId=\([^( ]*\).*/\1/p' | head -n1)
if [ -z "$nodes" ] || [ -z "$start" ]; then
  log "no node list or start time from Slurm; no energy report"
  exit 0
fi
case "$end" in ''|Unknown|None) end=$(date +%s) ;; esac

sleep "${JOULEGATE_SCRAPE_WAIT:-20}"
out_dir=${JOULEGATE_JOB_REPORT_DIR:-$workdir}
report=$(joulegate job-report --prometheus "$JOULEGATE_PROMETHEUS" --slurm-job "$JOB" \
  --nodes "$nodes" --start "$start" --end "$end" --format text 2>&1) || {
  log "job-report failed: $report"
  exit 0
}
target="$out_dir/slurm-$JOB.energy.txt"
if [ -n "${JOULEGATE_JOB_REPORT_DIR:-}" ] || [ -z "$owner" ]; then
  printf '%s\n' "$report" > "$target" || log "cannot write $target"
else
  # In the job's own directory, written as the job's user (never as root into a user's tree).
  printf '%s\n' "$report" | setpriv --reuid "$owner" --regid "$(id -g "$owner")" --init-groups \
    sh -c 'cat > "$1"' sh "$target" || log "cannot write $target as $owner"
fi
exit 0
