// Kernels view section: op-type statistics (calls, total / avg / min / max, Ratio of device
// time, by core type) and the CANN API statistics when the profile has them.
import { useState } from 'react';
import { csvUrl, getJson, profileParams, tableParams, type ProfileKey, type TablePage } from '../api';
import { DataTable, type Column, type TableState } from '../components/DataTable';
import { useAsync } from '../hooks';

export interface OpTypeRow {
  type: string;
  core_type: string;
  calls: number;
  total_us: number;
  avg_us: number;
  min_us: number;
  max_us: number;
  ratio_pct: number | null;
}

export interface ApiStatRow {
  level: string;
  name: string;
  calls: number;
  total_us: number;
  avg_us: number;
  min_us: number;
  max_us: number;
}

const TYPE_COLUMNS: Column<OpTypeRow>[] = [
  { key: 'type', label: 'Op type', width: 'minmax(200px, 3fr)' },
  { key: 'core_type', label: 'Core type' },
  { key: 'calls', label: 'Calls', kind: 'count' },
  { key: 'total_us', label: 'Total', kind: 'duration' },
  { key: 'avg_us', label: 'Avg', kind: 'duration' },
  { key: 'min_us', label: 'Min', kind: 'duration' },
  { key: 'max_us', label: 'Max', kind: 'duration' },
  { key: 'ratio_pct', label: 'Ratio (%)', kind: 'number', title: 'Share of device time in percent' },
];

const API_COLUMNS: Column<ApiStatRow>[] = [
  { key: 'name', label: 'API', width: 'minmax(200px, 3fr)' },
  { key: 'level', label: 'Level' },
  { key: 'calls', label: 'Calls', kind: 'count' },
  { key: 'total_us', label: 'Total', kind: 'duration' },
  { key: 'avg_us', label: 'Avg', kind: 'duration' },
  { key: 'min_us', label: 'Min', kind: 'duration' },
  { key: 'max_us', label: 'Max', kind: 'duration' },
];

export function OpTypesSection({ profile }: { profile: ProfileKey }) {
  const pk = [profile.run, profile.worker, profile.span];
  const [typeState, setTypeState] = useState<TableState>({ sort: '-total_us' });
  const [apiState, setApiState] = useState<TableState>({ sort: '-total_us' });
  const apis = useAsync(
    (signal) => getJson<TablePage<ApiStatRow>>('kernels/api_statistic', profileParams(profile, { limit: 1 }), signal),
    pk,
  );
  return (
    <>
      <section className="card" data-testid="section-op-types">
        <h2>Op types</h2>
        <DataTable<OpTypeRow>
          label="Op types"
          testId="table-op-types"
          columns={TYPE_COLUMNS}
          deps={pk}
          load={(q, signal) => getJson<TablePage<OpTypeRow>>('kernels/op_types', profileParams(profile, tableParams(q)), signal)}
          state={typeState}
          onStateChange={setTypeState}
          csvHref={(q) => csvUrl('kernels/op_types', profileParams(profile, { sort: q.sort, search: q.search }))}
          csvName="op_types.csv"
          searchPlaceholder="Search op type…"
        />
      </section>
      {apis.data && apis.data.total_rows > 0 && (
        <section className="card" data-testid="section-api-statistic">
          <h2>CANN API statistics</h2>
          <DataTable<ApiStatRow>
            label="CANN API statistics"
            testId="table-api-statistic"
            columns={API_COLUMNS}
            deps={pk}
            load={(q, signal) => getJson<TablePage<ApiStatRow>>('kernels/api_statistic', profileParams(profile, tableParams(q)), signal)}
            state={apiState}
            onStateChange={setApiState}
            csvHref={(q) => csvUrl('kernels/api_statistic', profileParams(profile, { sort: q.sort, search: q.search }))}
            csvName="api_statistic.csv"
            searchPlaceholder="Search API…"
          />
        </section>
      )}
    </>
  );
}
