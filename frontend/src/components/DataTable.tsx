// Reusable table: virtualized rows, server-side sort / search / paging (or the same done
// locally for small client-side tables), CSV export. Cells are rendered as React text,
// never as HTML.
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { TablePage, TableQuery } from '../api';
import { formatCount, formatDuration, formatSizeKB, formatSizeMB } from '../format';
import { useAsync, useDebounced } from '../hooks';
import { ErrorBox } from './States';

export type ColumnKind = 'text' | 'duration' | 'count' | 'sizeKB' | 'sizeMB' | 'number';

export interface Column<R> {
  /** Row field; also the API sort key. */
  key: string;
  label: string;
  kind?: ColumnKind;
  /** CSS grid track, e.g. "minmax(240px, 4fr)" or "110px". */
  width?: string;
  sortable?: boolean;
  /** Custom text for a cell (still rendered as text). */
  text?: (row: R) => string;
  /** Numeric value for data-value when the row field is not the value shown. */
  title?: string;
}

export interface TableState {
  sort?: string;
  search?: string;
  page?: number;
}

export interface DataTableProps<R> {
  label: string;
  testId: string;
  columns: Column<R>[];
  /** Loads one page. Re-run when `deps` or the table state change. */
  load: (q: TableQuery, signal: AbortSignal) => Promise<TablePage<R>>;
  deps: unknown[];
  state: TableState;
  onStateChange: (s: TableState) => void;
  /** CSV export through the API (format=csv) for the current sort/search. */
  csvHref?: (q: { sort?: string; search?: string }) => string;
  /** CSV export built locally (client-side tables). */
  csvText?: (q: { sort?: string; search?: string }) => string;
  csvName?: string;
  searchable?: boolean;
  searchPlaceholder?: string;
  pageSize?: number;
  maxHeight?: number;
  onRowClick?: (row: R) => void;
  isSelected?: (row: R) => boolean;
  toolbar?: ReactNode;
}

export function formatCell(kind: ColumnKind | undefined, v: unknown): string {
  if (v === null || v === undefined || v === '') return kind && kind !== 'text' ? '—' : '';
  if (typeof v !== 'number') return String(v);
  switch (kind) {
    case 'duration':
      return formatDuration(v);
    case 'count':
      return formatCount(v);
    case 'sizeKB':
      return formatSizeKB(v);
    case 'sizeMB':
      return formatSizeMB(v);
    case 'number':
      return Number.isInteger(v) ? formatCount(v) : v.toFixed(3);
    default:
      return String(v);
  }
}

function remPx(): number {
  const fs = parseFloat(getComputedStyle(document.documentElement).fontSize);
  return Number.isFinite(fs) && fs > 0 ? fs : 14;
}

export function DataTable<R extends object>(props: DataTableProps<R>) {
  const {
    columns,
    load,
    deps,
    state,
    onStateChange,
    pageSize = 200,
    maxHeight = 520,
    searchable = true,
  } = props;
  const page = state.page ?? 0;
  const [searchInput, setSearchInput] = useState(state.search ?? '');
  const debouncedSearch = useDebounced(searchInput, 250);

  // Keep the input in step with the URL (back/forward, deep links).
  useEffect(() => setSearchInput(state.search ?? ''), [state.search]);
  useEffect(() => {
    if ((debouncedSearch || undefined) !== (state.search || undefined)) {
      onStateChange({ ...state, search: debouncedSearch || undefined, page: 0 });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debouncedSearch]);

  const q: TableQuery = { limit: pageSize, offset: page * pageSize, sort: state.sort, search: state.search };
  const res = useAsync((signal) => load(q, signal), [...deps, state.sort, state.search, page, pageSize]);
  const rows = res.data?.rows ?? [];
  const total = res.data?.total_rows ?? 0;
  const pages = Math.max(1, Math.ceil(total / pageSize));

  const scrollRef = useRef<HTMLDivElement>(null);
  const rowHeight = useMemo(() => Math.round(remPx() * 2), []);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => rowHeight,
    overscan: 12,
  });
  useEffect(() => {
    scrollRef.current?.scrollTo({ top: 0 });
  }, [state.sort, state.search, page, ...deps]); // eslint-disable-line react-hooks/exhaustive-deps

  const template = columns.map((c) => c.width ?? (c.kind && c.kind !== 'text' ? 'minmax(90px, 1fr)' : 'minmax(200px, 4fr)')).join(' ');

  const toggleSort = (key: string) => {
    const next = state.sort === `-${key}` ? key : `-${key}`;
    onStateChange({ ...state, sort: next, page: 0 });
  };

  const sortKey = state.sort?.replace(/^-/, '');
  const sortDesc = state.sort?.startsWith('-');

  const downloadLocal = () => {
    if (!props.csvText) return;
    const blob = new Blob([props.csvText({ sort: state.sort, search: state.search })], { type: 'text/csv' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = props.csvName ?? 'table.csv';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  const items = virtualizer.getVirtualItems();
  const bodyHeight = Math.min(maxHeight, Math.max(rows.length, 1) * rowHeight);

  return (
    <div
      className="table-wrap"
      data-testid={props.testId}
      aria-label={props.label}
      aria-busy={res.loading}
      data-total={res.data ? total : undefined}
      data-offset={page * pageSize}
      data-sort={state.sort ?? ''}
    >
      <div className="table-toolbar">
        {searchable && (
          <input
            type="search"
            className="search"
            placeholder={props.searchPlaceholder ?? 'Search name…'}
            aria-label={`Search ${props.label}`}
            value={searchInput}
            onChange={(e) => setSearchInput(e.target.value)}
          />
        )}
        {props.toolbar}
        <span className="spacer" />
        <span className="table-count" data-testid={`${props.testId}-count`}>
          {res.data ? (total === 0 ? '0 rows' : `${formatCount(page * pageSize + 1)}–${formatCount(page * pageSize + rows.length)} of ${formatCount(total)}`) : ''}
        </span>
        <button
          type="button"
          className="btn icon"
          aria-label="Previous page"
          disabled={page <= 0}
          onClick={() => onStateChange({ ...state, page: page - 1 })}
        >
          ‹
        </button>
        <button
          type="button"
          className="btn icon"
          aria-label="Next page"
          disabled={page + 1 >= pages}
          onClick={() => onStateChange({ ...state, page: page + 1 })}
        >
          ›
        </button>
        {props.csvHref ? (
          <a
            className="btn"
            data-testid={`${props.testId}-csv`}
            href={props.csvHref({ sort: state.sort, search: state.search })}
            download={props.csvName ?? true}
          >
            Export CSV
          </a>
        ) : props.csvText ? (
          <button type="button" className="btn" data-testid={`${props.testId}-csv`} onClick={downloadLocal}>
            Export CSV
          </button>
        ) : null}
      </div>
      {res.error ? (
        <ErrorBox message={res.error} />
      ) : (
        <div className="table" role="table" aria-rowcount={total}>
          <div className="table-scroll-x">
            <div className="table-inner">
              <div className="thead" role="row" style={{ gridTemplateColumns: template }}>
                {columns.map((c) => {
                  const sortable = c.sortable !== false;
                  const active = sortKey === c.key;
                  return (
                    <div
                      key={c.key}
                      role="columnheader"
                      className={`th ${c.kind && c.kind !== 'text' ? 'num' : ''} ${sortable ? 'sortable' : ''} ${active ? 'active' : ''}`}
                      aria-sort={active ? (sortDesc ? 'descending' : 'ascending') : 'none'}
                      data-key={c.key}
                      title={c.title ?? c.label}
                      onClick={sortable ? () => toggleSort(c.key) : undefined}
                    >
                      <span>{c.label}</span>
                      {active && <span className="sort-mark">{sortDesc ? '▼' : '▲'}</span>}
                    </div>
                  );
                })}
              </div>
              <div ref={scrollRef} className="tbody" style={{ height: bodyHeight }}>
                {rows.length === 0 && !res.loading ? (
                  <div className="table-empty">{state.search ? `No rows match “${state.search}”.` : 'No rows.'}</div>
                ) : (
                  <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
                    {items.map((vi) => {
                      const r = rows[vi.index];
                      const selected = props.isSelected?.(r) ?? false;
                      return (
                        <div
                          key={vi.key}
                          role="row"
                          data-index={vi.index}
                          className={`tr ${vi.index % 2 ? 'odd' : ''} ${selected ? 'selected' : ''} ${props.onRowClick ? 'clickable' : ''}`}
                          style={{ gridTemplateColumns: template, height: rowHeight, transform: `translateY(${vi.start}px)` }}
                          onClick={props.onRowClick ? () => props.onRowClick!(r) : undefined}
                          aria-selected={selected}
                        >
                          {columns.map((c) => {
                            const v = (r as Record<string, unknown>)[c.key];
                            const text = c.text ? c.text(r) : formatCell(c.kind, v);
                            return (
                              <div
                                key={c.key}
                                role="cell"
                                className={`td ${c.kind && c.kind !== 'text' ? 'num' : ''}`}
                                data-key={c.key}
                                data-value={v === null || v === undefined ? '' : String(v)}
                                title={typeof v === 'string' ? v : undefined}
                              >
                                {text}
                              </div>
                            );
                          })}
                        </div>
                      );
                    })}
                  </div>
                )}
              </div>
            </div>
          </div>
          {res.loading && <div className="table-loading" role="status">Loading…</div>}
        </div>
      )}
    </div>
  );
}

/** Sort/search/page a client-side array the way the API does. */
export function localPage<R extends object>(rows: R[], q: TableQuery, searchKey: string): TablePage<R> {
  let out = rows;
  if (q.search) {
    const needle = q.search.toLowerCase();
    out = out.filter((r) => String((r as Record<string, unknown>)[searchKey] ?? '').toLowerCase().includes(needle));
  }
  if (q.sort) {
    const desc = q.sort.startsWith('-');
    const key = q.sort.replace(/^-/, '');
    out = [...out].sort((a, b) => {
      const va = (a as Record<string, unknown>)[key];
      const vb = (b as Record<string, unknown>)[key];
      let c: number;
      if (typeof va === 'number' && typeof vb === 'number') c = va - vb;
      else c = String(va ?? '').localeCompare(String(vb ?? ''), undefined, { numeric: true });
      return desc ? -c : c;
    });
  }
  const offset = q.offset ?? 0;
  const limit = q.limit ?? out.length;
  return { total_rows: out.length, rows: out.slice(offset, offset + limit) };
}

function csvField(v: unknown): string {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** CSV text (header + rows, raw values) of client-side rows. */
export function toCsv<R extends object>(rows: R[], keys: string[]): string {
  const lines = [keys.map(csvField).join(',')];
  for (const r of rows) lines.push(keys.map((k) => csvField((r as Record<string, unknown>)[k])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
