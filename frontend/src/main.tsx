// Entry point loaded by TensorBoard's data/plugin_entry.html, which imports this module
// (./plugin/npu_profiler/index.js) and calls render().
import { StrictMode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { App } from './App';
import { startThemeWatch } from './theme';
import css from './styles.css?inline';

let root: Root | null = null;

/** Mounts the app into document.body (idempotent). */
export function render(): void {
  if (root) return;
  if (!document.getElementById('npu-profiler-style')) {
    const style = document.createElement('style');
    style.id = 'npu-profiler-style';
    style.textContent = css;
    document.head.appendChild(style);
  }
  if (!document.querySelector('meta[name="viewport"]')) {
    const meta = document.createElement('meta');
    meta.name = 'viewport';
    meta.content = 'width=device-width, initial-scale=1';
    document.head.appendChild(meta);
  }
  if (!document.querySelector('link[rel~="icon"]')) {
    // No favicon request (the plugin page has none; TensorBoard's top page has its own).
    const icon = document.createElement('link');
    icon.rel = 'icon';
    icon.href = 'data:,';
    document.head.appendChild(icon);
  }
  document.title = 'NPU Profiler';
  startThemeWatch();
  const el = document.createElement('div');
  el.id = 'npu-profiler-root';
  document.body.appendChild(el);
  root = createRoot(el);
  root.render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
