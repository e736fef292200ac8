import { describe, expect, it } from 'vitest';
import { apiUrl, csvUrl, isLoadingAnswer, setApiBase } from './api';
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
