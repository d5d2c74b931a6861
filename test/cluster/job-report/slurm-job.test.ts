import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScontrolJob } from '../../../src/cluster/job-report/slurm-job.js';

describe('scontrol show job', () => {
  it('reads nodes and times from scontrol show job -o', () => {
    const line =
      'JobId=77 JobName=a UserId=u(1000) JobState=COMPLETED StartTime=2026-12-03T10:00:00 EndTime=2026-12-03T11:30:00 NodeList=cn[01-02] BatchHost=cn01';
    assert.deepEqual(parseScontrolJob(line), {
      nodeList: 'cn[01-02]',
      start: Date.parse('2026-12-03T10:00:00') / 1000,
      end: Date.parse('2026-12-03T11:30:00') / 1000,
    });
    assert.deepEqual(parseScontrolJob('JobId=78 StartTime=Unknown EndTime=Unknown NodeList=(null)'), {
      nodeList: undefined,
      start: undefined,
      end: undefined,
    });
  });
});
