// Advisor view: the backend's findings (GET /advisor) grouped by severity, each with what it
// costs per step, the numbers that prove it and links that open the evidence in the other
// views; then the rules that did not fire, and why. Also the Overview's "top findings" card.
import { useState } from 'react';
import { api, type AdvisorFinding, type ProfileKey } from '../api';
import type { ViewProps } from './types';
import {
  evidenceItems,
  groupBySeverity,
  impactText,
  isKnownView,
  linkHash,
  linkLabel,
  quietRules,
  SEVERITIES,
  SEVERITY_TITLES,
  topFindings,
  type EvidenceItem,
} from '../advisor';
import { ErrorBox, Loading, Notice } from '../components/States';
import { formatCount, formatDuration } from '../format';
import { useAsync } from '../hooks';
import { encodeState } from '../state';
import { traceLinkProps } from '../timeline/link';

/** Rows of an evidence table shown before "Show all". */
const EVIDENCE_ROWS = 10;
/** Cells longer than this wrap (names, stacks); shorter ones (numbers) stay on one line. */
const LONG_CELL = 48;
/** Findings on the Overview. */
const OVERVIEW_TOP = 3;

type Scope = 'run' | 'profile';

export function AdvisorView({ profile, worker, filters, setFilters }: ViewProps) {
  const scope: Scope = filters['advisor.scope'] === 'profile' ? 'profile' : 'run';
  const res = useAsync(
    (signal) => api.advisor(profile.run, scope === 'profile' ? profile : undefined, signal),
    [profile.run, scope, scope === 'profile' ? profile.worker : '', scope === 'profile' ? profile.span : ''],
  );
  const d = res.data;

  const scopeSwitch = (
    <div className="segmented" role="radiogroup" aria-label="Findings of">
      {(['run', 'profile'] as const).map((s) => (
        <button
          key={s}
          type="button"
          role="radio"
          aria-checked={s === scope}
          data-testid={`advisor-scope-${s}`}
          className={s === scope ? 'active' : ''}
          onClick={() => setFilters({ 'advisor.scope': s === 'run' ? undefined : s })}
        >
          {s === 'run' ? 'Whole run' : `This profile (${worker.name})`}
        </button>
      ))}
    </div>
  );

  let body;
  if (res.error) {
    body = <ErrorBox title="Cannot load the advisor" message={res.error} />;
  } else if (!d) {
    body = <Loading what="findings" progress={res.progress} />;
  } else {
    const groups = groupBySeverity(d.findings);
    const counts = Object.fromEntries(groups.map((g) => [g.severity, g.findings.length]));
    const quiet = quietRules(d.rules);
    body = (
      <>
        <div className="adv-summary" data-testid="advisor-summary" data-findings={d.findings.length}>
          <strong>
            {formatCount(d.findings.length)} finding{d.findings.length === 1 ? '' : 's'}
          </strong>
          {SEVERITIES.filter((s) => counts[s]).map((s) => (
            <span key={s} className={`adv-badge adv-sev-${s}`} data-testid={`advisor-count-${s}`} data-value={counts[s]}>
              {formatCount(counts[s])} {SEVERITY_TITLES[s].toLowerCase()}
            </span>
          ))}
          <span className="muted">
            {formatCount(d.rules.filter((r) => r.applies).length)} of {formatCount(d.rules.length)} rules apply to{' '}
            {scope === 'run' ? 'this run' : 'this profile'}
          </span>
        </div>
        {d.findings.length === 0 ? (
          <Notice>No rule found a problem in {scope === 'run' ? 'this run' : 'this profile'}.</Notice>
        ) : (
          groups.map((g) => (
            <section key={g.severity} className={`card adv-group adv-sev-${g.severity}`} data-testid={`advisor-group-${g.severity}`}>
              <h2>
                <span className={`adv-badge adv-sev-${g.severity}`}>{SEVERITY_TITLES[g.severity]}</span>
                {g.findings.length} finding{g.findings.length === 1 ? '' : 's'}
              </h2>
              <ul className="adv-findings">
                {g.findings.map((f, i) => (
                  <FindingCard key={`${f.id}\u0000${i}`} f={f} profile={profile} />
                ))}
              </ul>
            </section>
          ))
        )}
        <details className="card adv-rules" data-testid="advisor-rules">
          <summary>
            Rules without findings: {quiet.notApplicable.length} did not apply, {quiet.passed.length} found nothing
          </summary>
          {quiet.notApplicable.length > 0 && (
            <>
              <h3>Did not apply</h3>
              <ul className="adv-rule-list">
                {quiet.notApplicable.map((r) => (
                  <li key={r.rule} data-testid="advisor-rule" data-rule={r.rule} data-applies="false">
                    <code>{r.rule}</code> <span>{r.title}</span>
                    {r.why_not ? <span className="muted"> — {r.why_not}</span> : null}
                  </li>
                ))}
              </ul>
            </>
          )}
          {quiet.passed.length > 0 && (
            <>
              <h3>Checked, no problem found</h3>
              <ul className="adv-rule-list">
                {quiet.passed.map((r) => (
                  <li key={r.rule} data-testid="advisor-rule" data-rule={r.rule} data-applies="true">
                    <code>{r.rule}</code> <span>{r.title}</span>
                    {r.why_not ? <span className="muted"> — {r.why_not}</span> : null}
                  </li>
                ))}
              </ul>
            </>
          )}
        </details>
      </>
    );
  }

  return (
    <div className="view" data-testid="view-advisor" aria-busy={res.loading}>
      <div className="controls">{scopeSwitch}</div>
      {body}
    </div>
  );
}

function profileText(f: AdvisorFinding): string {
  const parts: string[] = [];
  if (f.rank !== null && f.rank !== undefined) parts.push(`rank ${f.rank}`);
  if (f.worker) parts.push(f.worker);
  if (f.span) parts.push(f.span);
  return parts.join(' · ');
}

function FindingCard({ f, profile }: { f: AdvisorFinding; profile: ProfileKey }) {
  const impact = impactText(f);
  const where = profileText(f);
  const evidence = evidenceItems(f.evidence);
  return (
    <li
      className={`adv-finding adv-sev-${f.severity}`}
      data-testid="advisor-finding"
      data-id={f.id}
      data-rule={f.rule}
      data-severity={f.severity}
      data-worker={f.worker ?? ''}
      data-rank={f.rank ?? ''}
      data-impact-us={f.impact_us ?? ''}
    >
      <div className="adv-head">
        <span className="adv-title" data-testid="advisor-title">{f.title}</span>
        <code className="adv-rule">{f.rule}</code>
        {where && <span className="adv-where" data-testid="advisor-where">{where}</span>}
      </div>
      {impact && (
        <div className="adv-impact" data-testid="advisor-impact">
          Fixing it saves {impact}
        </div>
      )}
      <p className="adv-message" data-testid="advisor-message">{f.message}</p>
      {f.advice && (
        <div className="adv-advice" data-testid="advisor-advice">
          <span className="adv-advice-label">Advice</span>
          <span className="adv-advice-text">{f.advice}</span>
        </div>
      )}
      {evidence.length > 0 && (
        <details className="adv-evidence" data-testid="advisor-evidence" open>
          <summary>Evidence</summary>
          <Evidence items={evidence} />
        </details>
      )}
      {f.links.length > 0 && (
        <div className="adv-links">
          {f.links.map((l, i) =>
            isKnownView(l.view) ? (
              <a key={i} className="btn small" data-testid="advisor-link" data-view={l.view} {...traceLinkProps(linkHash(l, f, profile))}>
                {linkLabel(l)}
              </a>
            ) : (
              <span key={i} className="muted small" data-testid="advisor-link-unknown">
                {linkLabel(l)}
              </span>
            ),
          )}
        </div>
      )}
    </li>
  );
}

function Evidence({ items }: { items: EvidenceItem[] }) {
  const values = items.filter((i) => i.kind === 'value');
  const rest = items.filter((i) => i.kind !== 'value');
  return (
    <div className="adv-evidence-body">
      {values.length > 0 && (
        <table className="adv-kv" data-testid="evidence-values">
          <tbody>
            {values.map((i) => (
              <tr key={i.key} data-key={i.key}>
                <th scope="row">{i.label}</th>
                <td data-value={i.value.raw} title={i.value.raw}>{i.value.text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rest.map((i) =>
        i.kind === 'list' ? (
          <div key={i.key} className="adv-list" data-key={i.key}>
            <span className="adv-list-label">{i.label}</span>
            {i.values.length === 0 ? (
              <span className="muted">none</span>
            ) : (
              i.values.map((v, k) => (
                <code key={k} data-value={v.raw}>
                  {v.text}
                </code>
              ))
            )}
          </div>
        ) : i.kind === 'table' ? (
          <EvidenceTable key={i.key} item={i} />
        ) : null,
      )}
    </div>
  );
}

function EvidenceTable({ item }: { item: Extract<EvidenceItem, { kind: 'table' }> }) {
  const [all, setAll] = useState(false);
  const rows = all ? item.rows : item.rows.slice(0, EVIDENCE_ROWS);
  return (
    <div className="adv-table-box">
      <div className="adv-list-label">{item.label}</div>
      <div className="adv-table-scroll">
        <table className="adv-table" data-testid="evidence-table" data-key={item.key}>
          <thead>
            <tr>
              {item.columns.map((c) => (
                <th key={c.key} scope="col" data-key={c.key}>
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, k) => (
              <tr key={k}>
                {r.map((c, j) => (
                  <td key={j} className={c.text.length > LONG_CELL ? 'wrap' : undefined} data-key={item.columns[j].key} data-value={c.raw} title={c.raw}>
                    {c.text}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {item.rows.length > EVIDENCE_ROWS && (
        <button type="button" className="btn small" onClick={() => setAll(!all)}>
          {all ? `Show the first ${EVIDENCE_ROWS}` : `Show all ${formatCount(item.rows.length)} rows`}
        </button>
      )}
    </div>
  );
}

/** The Overview's card: this profile's costliest findings and the way into the Advisor. */
export function TopFindings({ profile }: { profile: ProfileKey }) {
  const res = useAsync((signal) => api.advisor(profile.run, profile, signal), [profile.run, profile.worker, profile.span]);
  const advisorHash = encodeState({ ...profile, view: 'advisor', filters: { 'advisor.scope': 'profile' } });
  const top = res.data ? topFindings(res.data.findings, OVERVIEW_TOP) : [];
  return (
    <section className="card adv-top" data-testid="overview-findings">
      <h2>
        Top findings
        <a className="small" data-testid="overview-advisor-link" {...traceLinkProps(advisorHash)}>
          {res.data ? `All ${formatCount(res.data.findings.length)} in the Advisor` : 'Open the Advisor'}
        </a>
      </h2>
      {res.error ? (
        <p className="muted">The advisor is not available: {res.error}</p>
      ) : !res.data ? (
        <Loading what="findings" progress={res.progress} />
      ) : top.length === 0 ? (
        <p className="muted">No rule found a problem in this profile.</p>
      ) : (
        <ol className="adv-top-list">
          {top.map((f, i) => (
            <li key={`${f.id}\u0000${i}`} data-testid="overview-finding" data-id={f.id} data-rule={f.rule} data-severity={f.severity}>
              <span className={`adv-badge adv-sev-${f.severity}`}>{SEVERITY_TITLES[f.severity] ?? f.severity}</span>
              <span className="adv-title">{f.title}</span>
              {typeof f.impact_us === 'number' && <span className="adv-impact-short">{formatDuration(f.impact_us)} per step</span>}
              {f.links[0] && isKnownView(f.links[0].view) && (
                <a className="small" data-testid="overview-finding-link" {...traceLinkProps(linkHash(f.links[0], f, profile))}>
                  {linkLabel(f.links[0])}
                </a>
              )}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}
