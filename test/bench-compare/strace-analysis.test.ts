/**
 * The durability check is only as good as its reading of strace output: these tests feed it traces
 * shaped like the real ones (threads interleaving, unfinished/resumed calls, O_DSYNC descriptors) and
 * check that a commit acknowledged before any flush of its own is caught.
 */
import { describe, expect, it } from 'vitest';
import {
  MARK_PREFIX,
  analyseOrder,
  parseStraceSummary,
} from '../../bench/compare/strace-analysis.js';

const mark = (pid: number, name: string): string =>
  `${pid} statx(AT_FDCWD, "${MARK_PREFIX}/${name}", AT_STATX_SYNC_AS_STAT, STATX_ALL, 0x7ffd) = -1 ENOENT (No such file or directory)`;

describe('parseStraceSummary', () => {
  it('reads calls per syscall, with and without an errors column, and skips the total', () => {
    const summary = [
      '% time     seconds  usecs/call     calls    errors syscall',
      '------ ----------- ----------- --------- --------- ----------------',
      ' 52.92    0.006071          28       210           fdatasync',
      ' 47.08    0.005402          13       395         3 fsync',
      '------ ----------- ----------- --------- --------- ----------------',
      '100.00    0.011473          18       605         3 total',
    ].join('\n');

    expect(Object.fromEntries(parseStraceSummary(summary))).toEqual({ fdatasync: 210, fsync: 395 });
  });

  it('is empty when nothing was called', () => {
    expect(parseStraceSummary('').size).toBe(0);
  });
});

describe('analyseOrder', () => {
  it('credits a commit with the flushes between its begin and ack, including O_DSYNC writes', () => {
    const trace = [
      mark(10, 'begin-0'),
      '10 pwrite64(27, "x"..., 4096, 8192) = 4096',
      '10 fdatasync(27) = 0',
      '10 pwrite64(28, "m"..., 128, 4136) = 128',
      mark(10, 'ack-0'),
    ].join('\n');

    const analysis = analyseOrder(trace, [28], MARK_PREFIX);

    expect(analysis).toMatchObject({ commits: 1, flushedBeforeAck: 1 });
    expect(analysis.inWindows).toMatchObject({ fdatasync: 1, dsync_write: 1 });
  });

  it('follows a flush that another thread started inside the window and finished before the ack', () => {
    const trace = [
      mark(10, 'begin-0'),
      '12 fdatasync(30 <unfinished ...>',
      '10 futex(0x1, FUTEX_WAIT, 0, NULL) = 0',
      '12 <... fdatasync resumed>) = 0',
      mark(10, 'ack-0'),
    ].join('\n');

    expect(analyseOrder(trace, [], MARK_PREFIX)).toMatchObject({ commits: 1, flushedBeforeAck: 1 });
  });

  it('catches a commit acknowledged before its flush: the flush after the ack does not count', () => {
    const trace = [
      mark(10, 'begin-0'),
      '10 pwrite64(27, "x"..., 4096, 8192) = 4096',
      mark(10, 'ack-0'),
      '11 fdatasync(27) = 0',
      mark(10, 'begin-1'),
      '10 pwrite64(27, "y"..., 4096, 12288) = 4096',
      '10 fdatasync(27) = 0',
      mark(10, 'ack-1'),
    ].join('\n');

    const analysis = analyseOrder(trace, [], MARK_PREFIX);

    expect(analysis).toMatchObject({ commits: 2, flushedBeforeAck: 1 });
    expect(analysis.outsideWindows.fdatasync).toBe(1);
  });

  it('does not count a flush that started before the commit began', () => {
    const trace = [
      '12 fdatasync(30 <unfinished ...>',
      mark(10, 'begin-0'),
      '12 <... fdatasync resumed>) = 0',
      mark(10, 'ack-0'),
    ].join('\n');

    expect(analyseOrder(trace, [], MARK_PREFIX)).toMatchObject({ commits: 1, flushedBeforeAck: 0 });
  });

  it('tracks O_DSYNC descriptors opened and closed during the trace, and ignores failed flushes', () => {
    const trace = [
      mark(10, 'begin-0'),
      '10 openat(AT_FDCWD, "/d/data.mdb", O_WRONLY|O_DSYNC|O_CLOEXEC) = 40',
      '10 pwrite64(40, "m"..., 128, 40) = 128',
      '10 close(40) = 0',
      mark(10, 'ack-0'),
      mark(10, 'begin-1'),
      '10 openat(AT_FDCWD, "/d/other", O_RDWR|O_CREAT, 0644) = 40',
      '10 pwrite64(40, "m"..., 128, 40) = 128',
      '10 fdatasync(41) = -1 EIO (Input/output error)',
      mark(10, 'ack-1'),
    ].join('\n');

    const analysis = analyseOrder(trace, [], MARK_PREFIX);

    expect(analysis).toMatchObject({ commits: 2, flushedBeforeAck: 1 });
    expect(analysis.inWindows.dsync_write).toBe(1);
  });

  it('lets one group flush cover every concurrent commit whose window contains it', () => {
    const trace = [
      mark(10, 'begin-0'),
      mark(10, 'begin-1'),
      '13 fdatasync(31) = 0',
      mark(10, 'ack-1'),
      mark(10, 'ack-0'),
    ].join('\n');

    expect(analyseOrder(trace, [], MARK_PREFIX)).toMatchObject({ commits: 2, flushedBeforeAck: 2 });
  });
});
