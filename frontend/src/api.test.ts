import { afterEach, describe, expect, it, vi } from 'vitest';
import { apiUrl, csvUrl, getJson, HELD_WAIT_MS, isLoadingAnswer, noteLoading, requestUrl, setApiBase } from './api';
import { localPage, toCsv } from './components/DataTable';

describe('api urls', () => {
  it('resolves routes relative to the plugin directory (path prefixes survive)', () => {
    setApiBase('http://h:6006/x/data/plugin/npu_profiler/');
    expect(apiUrl('runs')).toBe('http://h:6006/x/data/plugin/npu_profiler/runs');
    expect(apiUrl('kernels', { run: 'a b', worker: 'w&1', span: '', step: undefined, limit: 10 })).toBe(
      'http://h:6006/x/data/plugin/npu_profiler/kernels?run=a+b&worker=w%261&limit=10',
    );
  });
  it('builds CSV URLs without paging', () => {
    setApiBase('http://h/data/plugin/npu_profiler');
    expect(csvUrl('operators', { run: 'r', limit: 100, offset: 200, sort: '-calls' })).toBe(
      'http://h/data/plugin/npu_profiler/operators?run=r&sort=-calls&format=csv',
    );
  });
  it('recognizes loading answers', () => {
    expect(isLoadingAnswer({ state: 'loading', progress: 0.5 })).toBe(true);
    expect(isLoadingAnswer({ runs: [], state: 'loading' })).toBe(false);
    expect(isLoadingAnswer({ rows: [] })).toBe(false);
  });
});

describe('local tables', () => {
  const rows = [
    { name: 'b', v: 2 },
    { name: 'A', v: 10 },
    { name: 'c', v: 1 },
  ];
  it('sorts, searches and pages like the API', () => {
    expect(localPage(rows, { sort: '-v' }, 'name').rows.map((r) => r.name)).toEqual(['A', 'b', 'c']);
    expect(localPage(rows, { sort: 'v', limit: 2, offset: 1 }, 'name')).toEqual({ total_rows: 3, rows: [rows[0], rows[1]] });
    expect(localPage(rows, { search: 'a' }, 'name').rows).toEqual([rows[1]]);
  });
  it('writes CSV with quoting', () => {
    expect(toCsv([{ a: 'x,y', b: 1 }, { a: 'q"', b: null }], ['a', 'b'])).toBe('a,b\r\n"x,y",1\r\n"q""",\r\n');
  });
});

describe('held requests', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('asks again with wait_ms only after a "still loading" answer, until an answer is ready', async () => {
    setApiBase('http://h/p/data/plugin/npu_profiler/');
    const answers = [
      { status: 503, body: { state: 'loading', progress: 0.25 } },
      { status: 503, body: { state: 'loading', progress: 0.5 } },
      { status: 200, body: { steps: [1] } },
      { status: 200, body: { steps: [2] } },
    ];
    const asked: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      asked.push(url);
      const a = answers.shift()!;
      return new Response(JSON.stringify(a.body), { status: a.status });
    });
    const key = { run: 'r', worker: 'w', span: 's' };
    expect(await getJson('steps', key)).toEqual({ state: 'loading', progress: 0.25 });
    expect(await getJson('steps', key)).toEqual({ state: 'loading', progress: 0.5 });
    expect(await getJson('steps', key)).toEqual({ steps: [1] });
    expect(await getJson('steps', key)).toEqual({ steps: [2] });
    const plain = 'http://h/p/data/plugin/npu_profiler/steps?run=r&worker=w&span=s';
    expect(asked).toEqual([plain, `${plain}&wait_ms=${HELD_WAIT_MS}`, `${plain}&wait_ms=${HELD_WAIT_MS}`, plain]);
  });

  it('holds only the URL that was loading, and forgets the oldest beyond its bound', () => {
    const a = 'http://h/x?run=a';
    const b = 'http://h/x?run=b';
    noteLoading(a, true);
    expect(requestUrl(a)).toBe(`${a}&wait_ms=${HELD_WAIT_MS}`);
    expect(requestUrl(b)).toBe(b);
    for (let i = 0; i < 300; i++) noteLoading(`http://h/y?i=${i}`, true);
    expect(requestUrl(a)).toBe(a);
    expect(requestUrl('http://h/y?i=299')).toContain('wait_ms=');
    noteLoading('http://h/y?i=299', false);
    expect(requestUrl('http://h/y?i=299')).toBe('http://h/y?i=299');
  });
});
