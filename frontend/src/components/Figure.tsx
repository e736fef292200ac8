// A key figure (label above a large value); `raw` keeps the unformatted value for tests and copies.
export function Figure({ label, value, testId, raw }: { label: string; value: string; testId: string; raw?: string | number }) {
  return (
    <div className="figure" data-testid={testId} data-value={raw === undefined ? undefined : String(raw)}>
      <div className="figure-label">{label}</div>
      <div className="figure-value">{value}</div>
    </div>
  );
}
