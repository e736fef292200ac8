// How many of the largest items a view charts ("Top N"), kept in the URL state as
// `<view>.top` (absent for the default). One control for every view that has it.
import type { Filters, SetFilters } from '../views/types';

export const TOP_N_CHOICES = [5, 10, 15, 20, 30];
const DEFAULT_TOP_N = 10;

/** The view's N: its `<view>.top` filter when that is a positive number, else 10. */
export function topNOf(filters: Filters, view: string): number {
  const n = Number(filters[`${view}.top`]);
  return n > 0 ? n : DEFAULT_TOP_N;
}

export function TopNSelect({ view, value, setFilters }: { view: string; value: number; setFilters: SetFilters }) {
  return (
    <label className="inline-field">
      Top
      <select
        data-testid={`${view}-topn`}
        value={String(value)}
        onChange={(e) => setFilters({ [`${view}.top`]: Number(e.target.value) === DEFAULT_TOP_N ? undefined : e.target.value })}
      >
        {TOP_N_CHOICES.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </label>
  );
}
