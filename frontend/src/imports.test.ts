// The module graph of src/ has no import cycle: shared types live in leaf modules (api.ts,
// views/types.ts), the shell imports the views through views/registry.ts, and no view imports
// the shell. Type-only imports count too: they make the same tangle for a reader.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(name) ? [p] : [];
  });
}

/** Module specifiers of every `import … from`, `import '…'`, `export … from` and `import('…')`. */
export function importSpecifiers(code: string): string[] {
  const noComments = code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of noComments.matchAll(re)) found.push(m[1]);
  return found;
}

function resolveLocal(from: string, spec: string, files: Set<string>): string | undefined {
  if (!spec.startsWith('.')) return undefined; // a package
  const base = resolve(dirname(from), spec.replace(/\?.*$/, ''));
  return [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find((c) => files.has(c));
}

/** Every cycle's path (first module repeated at the end); one per strongly tied loop found by DFS. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (n: string) => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'open') cycles.push([...stack.slice(stack.indexOf(m)), m]);
      else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

describe('import graph', () => {
  it('finds cycles (checks the checker)', () => {
    const g = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a', 'd']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(findCycles(g)).toEqual([['a', 'b', 'c', 'a'], ['e', 'e']]);
    expect(findCycles(new Map([['a', ['b']], ['b', []]]))).toEqual([]);
  });

  it('reads every kind of import statement', () => {
    const code = [
      "import { a } from './a';",
      "import type { B } from '../b';",
      "import {\n  c,\n  type C,\n} from './c';",
      "export { d } from './d';",
      "export * from './e';",
      "import './side.css';",
      "const f = import('./f');",
      "// import { g } from './commented';",
      "import React from 'react';",
    ].join('\n');
    expect(importSpecifiers(code).sort()).toEqual(['../b', './a', './c', './d', './e', './f', './side.css', 'react']);
  });

  it('has no cycle in src/', () => {
    const files = sourceFiles(SRC);
    const set = new Set(files);
    const graph = new Map<string, string[]>();
    for (const f of files) {
      const deps = importSpecifiers(readFileSync(f, 'utf8'))
        .map((s) => resolveLocal(f, s, set))
        .filter((x): x is string => !!x);
      graph.set(f, deps);
    }
    // The graph is real: the shell reaches the views through the registry.
    expect(graph.get(join(SRC, 'App.tsx'))).toContain(join(SRC, 'views', 'registry.ts'));
    expect(graph.get(join(SRC, 'views', 'registry.ts'))).toContain(join(SRC, 'views', 'trace', 'TraceView.tsx'));
    const cycles = findCycles(graph).map((c) => c.map((f) => relative(SRC, f)).join(' → '));
    expect(cycles).toEqual([]);
  });
});
