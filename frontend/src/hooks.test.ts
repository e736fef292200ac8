import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SOON_MS, startPoll, type Backoff, type PollNext } from './hooks';
import { heldSince, nextRunsPoll } from './runList';
import type { RunsResponse } from './api';

const BACKOFF: Backoff = { firstMs: 1000, maxMs: 4000, factor: 2 };

/** A fetch whose answers the test releases one by one; records when each call started. */
function controlledFetch() {
  const calls: { at: number; signal: AbortSignal; resolve: (v: number) => void }[] = [];
  const fn = (signal: AbortSignal) =>
    new Promise<number>((resolve) => {
      calls.push({ at: Date.now(), signal, resolve });
    });
  return { calls, fn };
}

describe('startPoll', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => vi.useRealTimers());

  it('backs off while nothing changes, up to the maximum', async () => {
    const { calls, fn } = controlledFetch();
    const stop = startPoll(fn, () => 'again', BACKOFF);
    const gaps: number[] = [];
    for (let i = 0; i < 5; i++) {
      const answeredAt = Date.now();
      calls[i].resolve(i);
      await vi.advanceTimersByTimeAsync(5000);
      gaps.push(calls[i + 1].at - answeredAt);
    }
    stop();
    expect(gaps).toEqual([1000, 2000, 4000, 4000, 4000]);
  });

  it('keeps one request in flight and resets the delay when asked', async () => {
    const { calls, fn } = controlledFetch();
    const answers: PollNext[] = ['again', 'again', 'reset', 'again', 'stop'];
    const seen: number[] = [];
    const stop = startPoll(fn, (o) => {
      seen.push(o.value as number);
      return answers[seen.length - 1];
    }, BACKOFF);
    // The first call hangs: no second one starts however long it takes.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls.length).toBe(1);
    const gaps: number[] = [];
    for (let i = 0; i < answers.length; i++) {
      const answeredAt = Date.now();
      calls[i].resolve(i);
      await vi.advanceTimersByTimeAsync(10_000);
      if (calls[i + 1]) gaps.push(calls[i + 1].at - answeredAt);
    }
    stop();
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    // again: 1 s, again: 2 s, reset: 1 s, again: 2 s, then stop.
    expect(gaps).toEqual([1000, 2000, 1000, 2000]);
    expect(calls.length).toBe(5);
  });

  it('stops: aborts the call in flight, drops its answer, schedules nothing', async () => {
    const { calls, fn } = controlledFetch();
    const handle = vi.fn((): PollNext => 'again');
    const stop = startPoll(fn, handle, BACKOFF);
    expect(calls[0].signal.aborted).toBe(false);
    stop();
    expect(calls[0].signal.aborted).toBe(true);
    calls[0].resolve(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(handle).not.toHaveBeenCalled();
    expect(calls.length).toBe(1);
  });

  it('passes errors to the handler and goes on as it says', async () => {
    let n = 0;
    const errors: string[] = [];
    const stop = startPoll(
      () => (++n < 3 ? Promise.reject(new Error(`fail ${n}`)) : Promise.resolve(n)),
      (o) => {
        if (o.error) {
          errors.push(o.error.message);
          return 'again';
        }
        return 'stop';
      },
      BACKOFF,
    );
    await vi.advanceTimersByTimeAsync(10_000);
    stop();
    expect(errors).toEqual(['fail 1', 'fail 2']);
    expect(n).toBe(3);
  });
});

describe('run list polling', () => {
  const ready = { name: 'a', state: 'ready' as const, progress: 1, errors: [] };
  it('backs off only while the list is unchanged and nothing loads', () => {
    const r: RunsResponse = { runs: [ready], scanned: true };
    const first = nextRunsPoll(r, undefined);
    expect(first.next).toBe('reset');
    expect(nextRunsPoll({ runs: [{ ...ready }], scanned: true }, first.key).next).toBe('again');
    // A new run, a loading run, a timeline being indexed, a first scan under way: poll soon.
    expect(nextRunsPoll({ runs: [ready, { ...ready, name: 'b' }], scanned: true }, first.key).next).toBe('reset');
    const loading: RunsResponse = { runs: [{ ...ready, state: 'loading', progress: 0.5 }], scanned: true };
    expect(nextRunsPoll(loading, nextRunsPoll(loading, undefined).key).next).toBe('reset');
    const indexing: RunsResponse = { runs: [{ ...ready, trace_state: 'loading' }], scanned: true };
    expect(nextRunsPoll(indexing, nextRunsPoll(indexing, undefined).key).next).toBe('reset');
    const scanning: RunsResponse = { runs: [], scanned: false };
    expect(nextRunsPoll(scanning, nextRunsPoll(scanning, undefined).key).next).toBe('reset');
  });
  it('asks again at once, held since the answer it has, while something loads', () => {
    const loading: RunsResponse = { runs: [{ ...ready, state: 'loading', progress: 0.5 }], scanned: true, generation: 7 };
    expect(nextRunsPoll(loading, undefined).next).toBe('soon');
    expect(heldSince(loading)).toBe(7);
    const done: RunsResponse = { runs: [ready], scanned: true, generation: 9 };
    expect(nextRunsPoll(done, undefined).next).toBe('reset');
    expect(heldSince(done)).toBeUndefined();
  });
});

describe('soon', () => {
  it('asks again after SOON_MS without touching the back-off', async () => {
    vi.useFakeTimers();
    const calls: number[] = [];
    const answers: PollNext[] = ['again', 'soon', 'again', 'stop'];
    const t0 = Date.now();
    startPoll(
      async () => {
        calls.push(Date.now() - t0);
        return 1;
      },
      () => answers.shift() ?? 'stop',
      { firstMs: 1000, maxMs: 4000, factor: 2 },
    );
    await vi.advanceTimersByTimeAsync(10000);
    vi.useRealTimers();
    // now; +1000 (first delay); +SOON_MS; then the back-off goes on where it was (2000)
    expect(calls).toEqual([0, 1000, 1000 + SOON_MS, 1000 + SOON_MS + 2000]);
  });
});
