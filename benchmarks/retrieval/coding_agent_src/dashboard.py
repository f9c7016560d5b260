"""ops-dashboard: the React/TypeScript back-office app used by support and finance."""

from __future__ import annotations

from .spec import Project

D = Project("ops-dashboard", ("claude-code", "cursor", "bob"))
add = D.add

add(
    "dash-react18",
    "fact",
    "2026-03-01 11:00",
    "ops-dashboard runs React 18.2 with Vite 5",
    "The ops dashboard is a Vite 5 single-page app on React 18.2 and TypeScript 5.4 in strict "
    "mode; there is no server-side rendering.",
    """
    package.json: react 18.2.0, react-dom 18.2.0, vite 5.2, typescript 5.4
    tsconfig.json: "strict": true, "noUncheckedIndexedAccess": true
    Entry: src/main.tsx -> <App /> in src/App.tsx
    """,
    tags="react vite typescript versions",
    agent="bob",
)
add(
    "dash-toolchain",
    "fact",
    "2026-03-02 09:20",
    "Dashboard toolchain: Node 20 LTS and pnpm 9",
    "The dashboard pins Node 20 in .nvmrc and uses pnpm 9 through corepack; npm and yarn lockfiles "
    "must never be committed.",
    """
    nvm use            # .nvmrc -> 20.11.1
    corepack enable && pnpm install --frozen-lockfile
    CI failing with ERR_PNPM_OUTDATED_LOCKFILE means package.json changed but pnpm-lock.yaml
    was not committed: run pnpm install locally and commit the lockfile.
    """,
    tags="node pnpm tooling",
    agent="bob",
)
add(
    "dash-jest",
    "decision",
    "2026-03-02 14:10",
    "Use Jest with Testing Library for dashboard unit tests",
    "Unit and component tests run on Jest 29 with ts-jest, jsdom and React Testing Library.",
    """
    jest.config.ts: preset ts-jest, testEnvironment jsdom, setupFiles src/test/setup.ts
    pnpm test -- --watch
    """,
    tags="testing jest",
    agent="cursor",
)
add(
    "dash-moment",
    "decision",
    "2026-03-03 10:30",
    "Format dates in the dashboard with moment.js",
    "All date parsing and formatting in the dashboard goes through moment 2.30 and "
    "moment-timezone, wrapped in src/lib/dates.ts.",
    """
    export const fmtDay = (iso: string) => moment.utc(iso).format('D MMM YYYY')
    moment-timezone data for Europe/* only, to limit bundle size
    """,
    tags="dates libraries",
    agent="cursor",
)
add(
    "dash-jwt-localstorage",
    "decision",
    "2026-03-03 15:40",
    "Keep the dashboard access token in localStorage",
    "After OIDC login the SPA stores the access token in localStorage and sends it as a Bearer "
    "header to the BFF; refresh happens silently in an iframe.",
    """
    src/auth/token.ts: localStorage.setItem('kd.access_token', token)
    Token lifetime 15 min, silent refresh via oidc-client-ts signinSilent()
    """,
    tags="auth security",
    agent="cursor",
)
add(
    "dash-styled",
    "decision",
    "2026-03-04 11:15",
    "Style dashboard components with styled-components",
    "Components are styled with styled-components v6 and a ThemeProvider fed from the design "
    "tokens; no global CSS except the reset.",
    """
    const Card = styled.div`padding: ${({ theme }) => theme.space[4]};`
    Theme: src/theme/index.ts wraps tokens for <ThemeProvider>
    """,
    tags="styling css",
    agent="bob",
)
add(
    "dash-redux",
    "decision",
    "2026-03-05 10:00",
    "Use Redux Toolkit for dashboard state",
    "Global state, including data fetched from the BFF, lives in a Redux Toolkit store with one "
    "slice per feature and createAsyncThunk for requests.",
    """
    src/store/index.ts: configureStore({ reducer: { payouts, merchants, disputes, ui } })
    Fetching: createAsyncThunk('payouts/fetch', ...) + status flags per slice
    """,
    tags="state redux",
    agent="bob",
)
add(
    "dash-no-default-exports",
    "preference",
    "2026-03-06 09:45",
    "No default exports in the dashboard codebase",
    "Bob wants named exports only: they keep imports greppable and renames safe. Default exports "
    "are allowed only where a tool requires them (vite.config.ts, Storybook meta).",
    """
    ESLint: "import/no-default-export": "error"
    overrides for vite.config.ts, playwright.config.ts and *.stories.tsx
    """,
    tags="style eslint typescript",
    agent="bob",
    weight=2.0,
)
add(
    "dash-bff",
    "fact",
    "2026-03-07 13:00",
    "The dashboard reaches payments-api only through the BFF",
    "Browser calls go to /bff/* on the same origin; the Fastify BFF in apps/bff adds the service "
    "credentials and calls the internal admin API. The SPA never talks to payments-api directly.",
    """
    apps/bff/src/routes/*.ts  (Fastify 4)
    Dev: vite proxy '/bff' -> http://localhost:4000
    BFF -> https://payments-admin.internal.kestrel.dev with mTLS client cert
    """,
    tags="bff architecture api",
    agent="bob",
    weight=1.5,
)
add(
    "dash-design-tokens",
    "fact",
    "2026-03-08 10:20",
    "Design tokens are the single source for colours and spacing",
    "src/theme/tokens.ts holds colours, spacing (4 px scale), radii and font sizes exported from "
    "Figma; components must not hard-code hex values.",
    """
    export const color = { brand500: '#3B5BDB', danger500: '#E03131', ... }
    export const space = [0, 4, 8, 12, 16, 24, 32, 48]
    Since the Tailwind move, tailwind.config.ts imports these tokens into theme.extend.
    Lint: stylelint-declaration-strict-value / eslint no-restricted-syntax for '#[0-9a-f]{6}'
    """,
    tags="design tokens styling",
    agent="bob",
    updated="2026-05-28 16:00",
)
add(
    "dash-figma-ref",
    "reference",
    "2026-03-08 10:40",
    "Ops dashboard Figma file",
    "Design source for the ops dashboard, including the component library page and the token "
    "export used for src/theme/tokens.ts.",
    """
    https://www.figma.com/design/Kx81mQ2aZ/Ops-Dashboard?node-id=0-1
    Pages: Foundations (tokens), Components, Payouts, Disputes, Merchants
    """,
    tags="design figma",
    agent="bob",
    weight=0.5,
)
add(
    "dash-chartjs",
    "decision",
    "2026-03-09 14:30",
    "Draw dashboard charts with Chart.js",
    "Charts on the overview page use Chart.js 4 through react-chartjs-2; enough for the handful of "
    "line and bar charts we need.",
    """
    src/components/charts/VolumeChart.tsx (line), FeesChart.tsx (bar)
    Register only the controllers we use to keep bundle size down.
    """,
    tags="charts libraries",
    agent="cursor",
)
add(
    "dash-i18n",
    "fact",
    "2026-03-10 09:00",
    "Dashboard UI strings are translated with react-intl",
    "Every user-facing string goes through react-intl messages in src/locales/en.json and de.json; "
    "literal strings in JSX fail lint.",
    """
    <FormattedMessage id="payouts.table.empty" defaultMessage="No payouts yet" />
    pnpm i18n:extract   # formatjs extract 'src/**/*.tsx' --out-file src/locales/en.json
    ESLint: formatjs/no-literal-string-in-jsx
    """,
    tags="i18n localization",
    agent="bob",
)
add(
    "dash-cypress",
    "decision",
    "2026-03-10 16:00",
    "End-to-end tests with Cypress",
    "Critical dashboard journeys (login, payouts list, refund) are covered by Cypress 13 specs "
    "running against staging in CI.",
    """
    cypress/e2e/payouts.cy.ts, refund.cy.ts, login.cy.ts
    CYPRESS_BASE_URL=https://dashboard.staging.kestrel.dev pnpm cypress run
    """,
    tags="testing e2e cypress",
    agent="cursor",
)
add(
    "dash-netlify",
    "decision",
    "2026-03-11 12:00",
    "Host the dashboard on Netlify",
    "The dashboard's static build is deployed to Netlify with deploy previews per pull request; "
    "/bff/* is proxied to the BFF through Netlify redirects.",
    """
    netlify.toml: [[redirects]] from = "/bff/*" to = "https://bff.kestrel.dev/:splat" status = 200
    Build: pnpm build -> dist/
    """,
    tags="hosting deploy",
    agent="bob",
)
add(
    "dash-pref-components",
    "preference",
    "2026-03-12 10:30",
    "Write components as plain functions with typed props",
    "Bob prefers `function PayoutRow(props: PayoutRowProps)` over React.FC and arrow-function "
    "components; props types are declared right above the component.",
    """
    type PayoutRowProps = { payout: Payout; onSelect: (id: string) => void }
    export function PayoutRow({ payout, onSelect }: PayoutRowProps) { ... }
    No React.FC (implicit children, worse generics).
    """,
    tags="style react typescript",
    agent="bob",
)
add(
    "dash-storybook",
    "fact",
    "2026-03-14 11:00",
    "Storybook 8 hosts the dashboard component library",
    "Shared components have stories under src/components/**; pnpm storybook serves them on port "
    "6006 and Chromatic runs visual diffs on every PR.",
    """
    pnpm storybook        # http://localhost:6006
    pnpm build-storybook  # used by the chromatic GitHub Action (CHROMATIC_PROJECT_TOKEN)
    """,
    tags="storybook components testing",
    agent="cursor",
)
add(
    "dash-sentry",
    "fact",
    "2026-03-15 15:00",
    "Dashboard errors are reported to Sentry",
    "Front-end errors go to the Sentry project ops-dashboard; the release is the git SHA and "
    "source maps are uploaded from CI, then deleted from dist/.",
    """
    DSN from VITE_SENTRY_DSN; Sentry.init({ release: import.meta.env.VITE_GIT_SHA })
    @sentry/vite-plugin uploads maps in the build job (SENTRY_AUTH_TOKEN from CI secrets)
    """,
    tags="errors monitoring sentry",
    agent="cursor",
)
add(
    "dash-lesson-vite-env",
    "lesson",
    "2026-03-18 17:20",
    "Vite only exposes env vars prefixed with VITE_",
    "import.meta.env.API_BASE_URL was undefined in production builds because Vite drops "
    "variables without the VITE_ prefix. And anything with the prefix is public in the bundle.",
    """
    Renamed to VITE_API_BASE_URL in .env.production and the Netlify settings.
    Never put secrets in VITE_* variables: they are inlined into dist/assets/*.js.
    Typed in src/vite-env.d.ts (interface ImportMetaEnv).
    """,
    tags="vite config env",
    agent="cursor",
)
add(
    "dash-openapi-client",
    "procedure",
    "2026-03-20 10:00",
    "Regenerate the typed API client from OpenAPI",
    "pnpm gen:api turns the BFF's OpenAPI document into TypeScript types in src/api/schema.d.ts; "
    "commit the result, CI fails on drift.",
    """
    1. Pull the latest apps/bff/openapi.yaml (it re-exports payments-api admin schemas)
    2. pnpm gen:api   # openapi-typescript apps/bff/openapi.yaml -o src/api/schema.d.ts
    3. pnpm typecheck and fix call sites
    4. Commit schema.d.ts; CI runs `git diff --exit-code src/api/schema.d.ts`
    """,
    tags="api codegen openapi",
    agent="claude-code",
)
add(
    "dash-feature-flags",
    "decision",
    "2026-04-05 10:10",
    "Feature flags in the dashboard come from Unleash",
    "UI features are toggled with the self-hosted Unleash server through the BFF's /bff/flags "
    "proxy; components read them with the useFlag hook.",
    """
    const payoutsV2 = useFlag('payouts-v2')
    Unleash proxy: /bff/flags (frontend token, never the admin token)
    Remove a flag within two sprints of reaching 100%.
    """,
    tags="feature-flags unleash",
    agent="bob",
)
add(
    "dash-date-fns",
    "decision",
    "2026-04-08 14:20",
    "Replace moment with date-fns",
    "moment is in maintenance mode and added 72 kB gzipped; dashboard dates now use date-fns 3 and "
    "date-fns-tz, tree-shaken per function.",
    """
    DASH-176
    import { format, parseISO } from 'date-fns'
    import { formatInTimeZone } from 'date-fns-tz'
    src/lib/dates.ts keeps the same exported helpers, so call sites did not change.
    """,
    tags="dates libraries bundle",
    agent="cursor",
    supersedes="dash-moment",
)
add(
    "dash-forms",
    "pattern",
    "2026-04-10 11:30",
    "Forms use react-hook-form with zod schemas",
    "Each form declares a zod schema next to the component and validates with zodResolver; problem+"
    "json validation errors from the BFF are mapped onto fields with setError.",
    """
    const schema = z.object({ amount: z.number().int().positive(), reason: z.enum(reasons) })
    const form = useForm<z.infer<typeof schema>>({ resolver: zodResolver(schema) })
    onError: problem.errors?.forEach(e => form.setError(e.field, { message: e.detail }))
    """,
    tags="forms validation react",
    agent="claude-code",
)
add(
    "dash-lesson-strictmode",
    "lesson",
    "2026-04-12 15:10",
    "StrictMode double effects sent duplicate analytics events",
    "Page-view tracking lived in a useEffect, and React 18 StrictMode runs effects twice in "
    "development, which hid a real double-send in production route changes.",
    """
    DASH-198
    Fix: track in the router's onNavigate callback, not in component effects.
    Rule of thumb: effects synchronise with external systems; events belong in handlers.
    """,
    tags="react analytics bugs",
    agent="cursor",
)
add(
    "dash-add-page",
    "procedure",
    "2026-04-15 10:00",
    "Add a new page to the ops dashboard",
    "A new page needs a route, a nav entry, a permission key, data hooks, a story and a Playwright "
    "smoke test.",
    """
    1. Route: src/routes.tsx -> { path: '/disputes', element: <DisputesPage /> }
    2. Nav: src/components/nav/items.ts (icon, label message id, permission)
    3. Permission: src/auth/permissions.ts, e.g. 'disputes:read'
    4. Data: src/api/queries/disputes.ts (queryOptions factory)
    5. Story for any new component, e2e smoke in e2e/smoke.spec.ts
    """,
    tags="routing onboarding",
    agent="claude-code",
    updated="2026-06-20 09:00",
)
add(
    "dash-permissions",
    "fact",
    "2026-04-16 13:45",
    "Dashboard roles and what they may do",
    "Three roles: support (read everything, refunds up to EUR 500), finance (payouts, "
    "reconciliation, refunds of any size) and admin (user management, feature flags).",
    """
    src/auth/permissions.ts maps role -> permission keys
    support: payments:read, refunds:write(<=50000 minor units), disputes:read
    finance: payouts:write, recon:read, refunds:write
    admin: users:write, flags:write + everything else
    """,
    tags="auth roles permissions",
    agent="bob",
)
add(
    "dash-vitest",
    "decision",
    "2026-04-20 11:00",
    "Migrate unit tests from Jest to Vitest",
    "Unit and component tests now run on Vitest 1.5, reusing the Vite config; the suite went from "
    "94 s to 21 s and ts-jest/babel config disappeared.",
    """
    DASH-181
    vitest.config.ts: environment 'jsdom', setupFiles ['src/test/setup.ts'], globals false
    jest.fn -> vi.fn, jest.mock -> vi.mock (codemod: npx jest-to-vitest)
    pnpm test / pnpm test:watch
    """,
    tags="testing vitest",
    agent="cursor",
    supersedes="dash-jest",
)
add(
    "dash-error-boundary",
    "pattern",
    "2026-04-25 10:20",
    "One error boundary per route",
    "Every route element is wrapped in RouteErrorBoundary, which reports to Sentry and resets when "
    "the location changes, so one broken page never blanks the whole app.",
    """
    src/components/RouteErrorBoundary.tsx (react-error-boundary)
    <ErrorBoundary FallbackComponent={RouteFallback} resetKeys={[location.pathname]}
                   onError={(e) => Sentry.captureException(e)}>
    """,
    tags="errors react",
    agent="claude-code",
)
add(
    "dash-lesson-flaky-vitest",
    "lesson",
    "2026-04-26 16:00",
    "Flaky Vitest suite: fake timers and query retries",
    "Component tests using vi.useFakeTimers hung intermittently because TanStack Query retried "
    "failed requests with real backoff. Test QueryClients now disable retries.",
    """
    src/test/renderWithClient.tsx:
      new QueryClient({ defaultOptions: { queries: { retry: false, gcTime: Infinity } } })
    vi.useFakeTimers({ shouldAdvanceTime: true }) where timers are needed
    """,
    tags="testing flaky vitest",
    agent="cursor",
)
add(
    "dash-lesson-timezone",
    "lesson",
    "2026-04-29 12:40",
    "Charts showed dates shifted by one day for US users",
    "new Date('2026-04-01') is UTC midnight, which renders as 31 March in America/*. Day buckets "
    "from the BFF are now parsed as plain dates and formatted in the user's profile timezone.",
    """
    DASH-212
    Bad:  format(new Date(day), 'd MMM')
    Good: formatInTimeZone(parseISO(`${day}T00:00:00Z`), 'UTC', 'd MMM')  for day buckets
          formatInTimeZone(ts, user.timezone, ...) for instants
    """,
    tags="dates timezone bugs",
    agent="cursor",
)
add(
    "dash-bff-cookie",
    "decision",
    "2026-05-02 10:30",
    "Move the dashboard session to an httpOnly cookie",
    "The SPA no longer holds tokens: the BFF runs the OIDC code flow and keeps the session in an "
    "httpOnly, Secure, SameSite=Strict cookie, removing XSS token theft.",
    """
    DASH-220 (pen-test finding KST-PT-07)
    Cookie: __Host-kd_session, 8h absolute lifetime
    CSRF: double-submit token header x-kd-csrf on non-GET
    src/auth/token.ts deleted; fetches use credentials: 'include'
    """,
    tags="auth security bff",
    agent="claude-code",
    supersedes="dash-jwt-localstorage",
)
add(
    "dash-recharts",
    "decision",
    "2026-05-06 15:00",
    "Switch dashboard charts to Recharts",
    "Chart.js's imperative API fought React state, so charts moved to Recharts 2 with composable "
    "JSX components and tooltips built from our own components.",
    """
    DASH-225
    <ResponsiveContainer><LineChart data={points}><Line dataKey="volume" /></LineChart>
    src/components/charts/* rewritten; react-chartjs-2 removed.
    """,
    tags="charts libraries",
    agent="cursor",
    supersedes="dash-chartjs",
)
add(
    "dash-zustand",
    "decision",
    "2026-05-12 10:00",
    "Replace Redux with TanStack Query and Zustand",
    "Server state moved to TanStack Query v5 (caching, refetch, invalidation); the little client "
    "state left (filters, sidebar) lives in small Zustand stores. Redux Toolkit is gone.",
    """
    DASH-241
    src/store/* deleted; src/state/useFiltersStore.ts, useUiStore.ts (zustand 4.5)
    QueryClient defaults: staleTime 30_000, refetchOnWindowFocus true
    """,
    tags="state tanstack-query zustand",
    agent="bob",
    supersedes="dash-redux",
)
add(
    "dash-tanstack-ref",
    "reference",
    "2026-05-12 10:20",
    "TanStack Query v5 docs",
    "Reference pages for query options, invalidation and the v4 to v5 migration.",
    """
    https://tanstack.com/query/v5/docs/framework/react/overview
    https://tanstack.com/query/v5/docs/framework/react/guides/query-options
    https://tanstack.com/query/v5/docs/framework/react/guides/migrating-to-v5
    """,
    tags="tanstack-query docs",
    agent="claude-code",
    weight=0.5,
)
add(
    "dash-query-hooks",
    "pattern",
    "2026-05-14 14:00",
    "Data fetching through queryOptions factories",
    "Each resource has a factory in src/api/queries/<resource>.ts returning queryOptions; "
    "components call useQuery(payoutQueries.list(filters)) instead of inline keys.",
    """
    export const payoutQueries = {
      all: () => ['payouts'] as const,
      list: (f: PayoutFilters) => queryOptions({ queryKey: ['payouts', 'list', f],
                                                 queryFn: () => bff.get('/payouts', f) }),
    }
    Invalidate with queryClient.invalidateQueries({ queryKey: payoutQueries.all() })
    """,
    tags="tanstack-query data-fetching",
    agent="claude-code",
)
add(
    "dash-lesson-query-key-loop",
    "lesson",
    "2026-05-20 18:00",
    "Infinite refetch loop from an unstable query key",
    "The payouts page refetched every render because its query key contained new Date() objects "
    "built during render. Keys must be serialisable and stable.",
    """
    DASH-233
    Bad:  queryKey: ['payouts', { from: new Date(Date.now() - 7 * DAY) }]
    Good: compute the ISO day string once (useMemo or store) and key on that
    Spotted via React Query Devtools: fetch count climbing at ~60/s.
    """,
    tags="tanstack-query bugs performance",
    agent="cursor",
)
add(
    "dash-tailwind",
    "decision",
    "2026-05-28 15:30",
    "Replace styled-components with Tailwind CSS",
    "Runtime CSS-in-JS cost ~9 ms per table render; the dashboard now uses Tailwind 3.4 utility "
    "classes generated from the design tokens.",
    """
    DASH-248
    tailwind.config.ts: theme.extend.colors/spacing imported from src/theme/tokens.ts
    clsx + tailwind-merge via src/lib/cn.ts
    Migration per directory; styled-components removed on 2026-06-20.
    """,
    tags="styling css tailwind",
    agent="bob",
    supersedes="dash-styled",
)
add(
    "dash-pagination",
    "pattern",
    "2026-05-30 10:45",
    "Cursor pagination in dashboard tables",
    "Tables page through the API with starting_after cursors and useInfiniteQuery; page numbers "
    "are not supported because the API has no offset.",
    """
    useInfiniteQuery({ ...payoutQueries.list(f), initialPageParam: undefined,
      getNextPageParam: (last) => last.has_more ? last.data.at(-1)?.id : undefined })
    'Load more' button, not infinite scroll (finance wants stable positions).
    """,
    tags="tables pagination tanstack-query",
    agent="claude-code",
)
add(
    "dash-a11y",
    "decision",
    "2026-06-02 11:00",
    "Dashboard targets WCAG 2.1 AA",
    "Accessibility baseline is WCAG 2.1 AA: axe checks run in the Playwright suite and token "
    "colours were adjusted to reach 4.5:1 contrast.",
    """
    e2e/a11y.spec.ts uses @axe-core/playwright on every top-level route
    Failing rules block merge; known exceptions listed in e2e/a11y-allowlist.json
    """,
    tags="accessibility a11y",
    agent="bob",
)
add(
    "dash-lesson-lodash",
    "lesson",
    "2026-06-09 14:30",
    "A whole-lodash import added 70 kB to the main chunk",
    "src/features/export/csv.ts did `import _ from 'lodash'`, pulling the full library into the "
    "main bundle. We now use lodash-es named imports or native code, guarded by size-limit.",
    """
    DASH-256
    pnpm size   # size-limit, budget 450 kB gzip for dist/assets/index-*.js
    ESLint no-restricted-imports: 'lodash' (use 'lodash-es' or native)
    """,
    tags="bundle performance",
    agent="cursor",
)
add(
    "dash-playwright",
    "decision",
    "2026-06-18 10:00",
    "Switch dashboard e2e tests to Playwright",
    "Cypress runs were slow and flaky with the new cookie auth; e2e specs now use Playwright 1.45 "
    "with a storageState login fixture and run sharded across 4 CI jobs.",
    """
    DASH-266
    e2e/*.spec.ts, playwright.config.ts (projects: chromium, webkit)
    Auth: e2e/global-setup.ts logs in once and saves e2e/.auth/support.json
    pnpm e2e -- --shard=1/4 ; traces kept on first retry
    """,
    tags="testing e2e playwright",
    agent="cursor",
    supersedes="dash-cypress",
)
add(
    "dash-playwright-ref",
    "reference",
    "2026-06-18 10:30",
    "Playwright docs for fixtures and traces",
    "Playwright pages we use for auth fixtures, sharding and the trace viewer.",
    """
    https://playwright.dev/docs/auth
    https://playwright.dev/docs/test-sharding
    https://playwright.dev/docs/trace-viewer
    """,
    tags="playwright docs testing",
    agent="cursor",
    weight=0.5,
)
add(
    "dash-virtual-tables",
    "decision",
    "2026-06-25 16:00",
    "Virtualise large tables with TanStack Virtual",
    "Tables that can hold more than 500 rows (payouts, ledger lines) render through "
    "@tanstack/react-virtual so only visible rows are mounted.",
    """
    DASH-270
    src/components/table/VirtualTable.tsx, row height fixed at 44 px
    Sticky header via CSS position: sticky; keyboard navigation kept with aria-rowindex
    """,
    tags="tables performance",
    agent="claude-code",
)
add(
    "dash-q3-roadmap",
    "context",
    "2026-07-01 10:00",
    "Dashboard roadmap for Q3 2026",
    "Q3: payouts v2 page, a disputes screen with evidence upload, React 19 upgrade and moving "
    "hosting off Netlify into our AWS account.",
    """
    DASH-280 payouts v2, DASH-295 disputes, DASH-299 React 19, DASH-284 hosting
    Owner: bob; agents pick up tickets labelled agent-ok
    """,
    tags="planning roadmap",
    agent="bob",
)
add(
    "dash-lesson-playwright-flaky",
    "lesson",
    "2026-07-03 11:20",
    "Flaky Playwright test: payouts filter raced the response",
    "payouts.spec.ts clicked a filter and asserted the row count before the refetch landed. Wait "
    "for the response or use auto-retrying assertions, never waitForTimeout.",
    """
    DASH-262
    await Promise.all([page.waitForResponse('**/bff/payouts?*status=paid*'), chip.click()])
    await expect(page.getByRole('row')).toHaveCount(21)
    ESLint: playwright/no-wait-for-timeout
    """,
    tags="testing flaky playwright",
    agent="cursor",
)
add(
    "dash-s3-cloudfront",
    "decision",
    "2026-07-08 14:00",
    "Serve the dashboard from S3 and CloudFront",
    "Dashboard hosting moved from Netlify to a private S3 bucket behind CloudFront in our AWS "
    "account; the BFF sits behind the same distribution under /bff/*.",
    """
    DASH-284, infra module modules/static-site (OAC, TLS cert in us-east-1)
    Deploy: aws s3 sync dist/ s3://kestrel-ops-dashboard-prod --delete
            aws cloudfront create-invalidation --distribution-id E2K9... --paths '/index.html'
    Assets are hashed and cached 1 year; index.html no-cache.
    """,
    tags="hosting deploy aws",
    agent="claude-code",
    supersedes="dash-netlify",
)
add(
    "dash-payouts-v2",
    "context",
    "2026-07-15 09:30",
    "Payouts v2 page",
    "The new payouts page shows per-currency payouts with their bank status, lets finance hold or "
    "release a payout, and links each payout to its ledger lines.",
    """
    DASH-280 behind flag payouts-v2; route /payouts (old page at /payouts-legacy until Sept)
    Hold/release calls POST /bff/payouts/:id/hold and /release (finance role only)
    """,
    tags="payouts feature",
    agent="bob",
)
add(
    "dash-lesson-csv-export",
    "lesson",
    "2026-07-22 13:10",
    "Exporting 200k rows to CSV froze the browser tab",
    "Building large CSVs in the browser blocked the main thread for 40 s. Exports over 10k rows "
    "are now async jobs in the BFF that return a presigned S3 URL.",
    """
    DASH-287
    POST /bff/exports {resource, filters} -> {export_id}; poll GET /bff/exports/:id
    Files in s3://kestrel-dashboard-exports, expire after 24h
    """,
    tags="performance exports",
    agent="claude-code",
)
add(
    "dash-echarts",
    "decision",
    "2026-08-13 10:00",
    "Move heavy dashboard charts to Apache ECharts",
    "Recharts' SVG rendering choked on the 50k-point ledger balance chart; charts now use ECharts "
    "5 with the canvas renderer via echarts-for-react.",
    """
    DASH-291
    src/components/charts/EChart.tsx wraps echarts-for-react with our theme from tokens
    Only the used components are registered (LineChart, BarChart, Grid, Tooltip, DataZoom)
    recharts removed from package.json.
    """,
    tags="charts libraries performance",
    agent="cursor",
    supersedes="dash-recharts",
)
add(
    "dash-disputes-screen",
    "context",
    "2026-08-20 15:00",
    "Disputes screen design notes",
    "The disputes screen lists open dsp_ objects sorted by evidence deadline, with a countdown "
    "badge and a drawer to upload evidence files.",
    """
    DASH-295. Upload via POST /bff/disputes/:id/evidence (multipart, 4 MB per file)
    Badge colours: > 7 days neutral, 2-7 days warning, < 48 h danger
    """,
    tags="disputes feature",
    agent="bob",
)
add(
    "dash-react19",
    "fact",
    "2026-09-02 11:00",
    "ops-dashboard upgraded to React 19",
    "The dashboard now runs React 19.0 with the new JSX transform types; forwardRef wrappers are "
    "being removed since ref is a regular prop.",
    """
    DASH-299. react 19.0.0, @types/react 19, react-error-boundary 4.1
    Codemod: npx codemod react/19/migration-recipe
    useFormStatus/useActionState not adopted yet (forms stay on react-hook-form).
    """,
    tags="react versions",
    agent="claude-code",
    supersedes="dash-react18",
)
add(
    "dash-lesson-flaky-tz",
    "lesson",
    "2026-09-10 10:15",
    "Flaky Playwright test: date picker depended on the runner's timezone",
    "disputes.spec.ts passed locally (Europe/Berlin) and failed on CI runners in UTC around "
    "midnight. Playwright now pins timezoneId and locale for every project.",
    """
    DASH-301
    playwright.config.ts: use: { timezoneId: 'Europe/Berlin', locale: 'en-GB' }
    Dates in fixtures are fixed instants, never Date.now().
    """,
    tags="testing flaky playwright timezone",
    agent="cursor",
)
add(
    "dash-url-state",
    "pattern",
    "2026-07-10 11:40",
    "Table filters live in the URL",
    "Filters, sort and the selected row of every table are read from and written to the query "
    "string, parsed with a zod schema, so links can be shared and the back button works.",
    """
    const [params, setParams] = useSearchParams()
    const filters = payoutFilters.parse(Object.fromEntries(params))   // zod, with defaults
    Zustand keeps only UI state that should not be shared (sidebar, density).
    """,
    tags="routing state tables",
    agent="claude-code",
)
add(
    "dash-stories-required",
    "decision",
    "2026-08-05 10:00",
    "Every shared component ships with a story",
    "Components under src/components/ need a Storybook story covering their states before merge; "
    "Chromatic snapshots are the visual regression net for the whole design system.",
    """
    CI check: scripts/check-stories.ts fails if a component file has no *.stories.tsx sibling
    States to cover: default, loading, empty, error, long text (German strings)
    """,
    tags="storybook components testing",
    agent="cursor",
)

RECORDS = D.records
