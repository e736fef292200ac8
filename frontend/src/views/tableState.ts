// Table sort/search/page kept in the URL, namespaced per table ("kernels.sort").
import type { TableState } from '../components/DataTable';

export function tableState(filters: Record<string, string>, ns: string): TableState {
  const page = Number(filters[`${ns}.page`] ?? '0');
  return {
    sort: filters[`${ns}.sort`],
    search: filters[`${ns}.q`],
    page: Number.isFinite(page) && page > 0 ? Math.floor(page) : 0,
  };
}

export function tableStatePatch(ns: string, s: TableState): Record<string, string | undefined> {
  return {
    [`${ns}.sort`]: s.sort,
    [`${ns}.q`]: s.search,
    [`${ns}.page`]: s.page ? String(s.page) : undefined,
  };
}
