/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

// The bundle is served by the TensorBoard plugin backend from tb_plugin/static/ at
// data/plugin/npu_profiler/index.js and imported by TensorBoard's plugin_entry.html, which
// calls the exported render(). One ES module with fixed names, so builds are deterministic
// and the committed bundle only changes when the source does. The CSS is inlined into the
// module (imported with ?inline) and injected as a <style> element by render().
export default defineConfig({
  plugins: [react()],
  base: './',
  define: {
    'process.env.NODE_ENV': JSON.stringify('production'),
  },
  build: {
    outDir: fileURLToPath(new URL('../tb_plugin/static', import.meta.url)),
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    minify: true,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1500,
    modulePreload: false,
    rolldownOptions: {
      input: fileURLToPath(new URL('./src/main.tsx', import.meta.url)),
      // Keep render() exported from the entry module.
      preserveEntrySignatures: 'strict',
      output: {
        format: 'es',
        entryFileNames: 'index.js',
        // Everything in one file: no chunk needs to be found relative to the module.
        codeSplitting: false,
      },
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});
