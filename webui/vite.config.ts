import { defineConfig } from 'vitest/config'
import vue from '@vitejs/plugin-vue'

// The app is served by the gateway at /admin, its files at
// /admin/assets/{name}-{hash}.{ext} (gateway/admin_assets_gen.go is
// generated from dist/ by `make admin-ui`).
export default defineConfig({
  base: '/admin/',
  plugins: [vue()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    // No inline script or style anywhere: the CSP forbids them.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.spec.ts'],
  },
})
