import * as dte from '../dte/service.js';
import * as merchants from '../merchants/service.js';
import { configureProvider } from '../checkout/provider-settings.js';
import { replayFailedDeliveries } from '../webhooks/replay.js';
import * as admin from './service.js';
import * as s from './schemas.js';
import { adminProcedure, createCallerFactory, router } from './trpc.js';

/** Support staff's interface (docs/decisions.md §1, §9, §10): every procedure is one service call. */
export const appRouter = router({
  deliveries: router({
    list: adminProcedure.input(s.deliveryListInput).query(({ ctx, input }) => admin.listDeliveries(ctx.db, input)),
    get: adminProcedure.input(s.deliveryIdInput).query(({ ctx, input }) => admin.getDelivery(ctx.db, input.delivery_id)),
    replay: adminProcedure.input(s.deliveryIdInput).mutation(({ ctx, input }) => admin.replay(ctx.db, ctx.deps, input.delivery_id)),
    replayFailed: adminProcedure
      .input(s.replayFailedInput)
      .mutation(({ ctx, input }) => replayFailedDeliveries(ctx.db, ctx.deps, input.endpoint_id, input.since, input.limit)),
  }),
  endpoints: router({
    list: adminProcedure.input(s.endpointListInput).query(({ ctx, input }) => admin.listEndpoints(ctx.db, input)),
    enable: adminProcedure.input(s.endpointIdInput).mutation(({ ctx, input }) => admin.setEndpointEnabled(ctx.db, input.endpoint_id, true)),
    disable: adminProcedure.input(s.endpointIdInput).mutation(({ ctx, input }) => admin.setEndpointEnabled(ctx.db, input.endpoint_id, false)),
  }),
  events: router({
    list: adminProcedure.input(s.eventListInput).query(({ ctx, input }) => admin.listEvents(ctx.db, input)),
    get: adminProcedure.input(s.eventIdInput).query(({ ctx, input }) => admin.getEvent(ctx.db, input.event_id)),
    types: adminProcedure.query(() => admin.eventTypes()),
  }),
  merchants: router({
    create: adminProcedure.input(s.createMerchantInput).mutation(({ ctx, input }) => admin.createMerchant(ctx.db, input)),
    list: adminProcedure.query(({ ctx }) => merchants.listMerchants(ctx.db)),
    setPaymentProvider: adminProcedure
      .input(s.setProviderInput)
      .mutation(({ ctx, input }) => {
        const { merchant_id, payment_provider, ...credentials } = input;
        return configureProvider(ctx.db, ctx.deps.secrets, merchant_id, payment_provider, credentials);
      }),
    /** The issuer's legal profile its documents print (docs/decisions.md §15); null clears it. */
    setTaxProfile: adminProcedure
      .input(s.setTaxProfileInput)
      .mutation(({ ctx, input }) => merchants.setTaxProfile(ctx.db, input.merchant_id, input.tax_profile)),
    /** What the hosted invoice page says about paying when the merchant cannot charge (docs/decisions.md §11); null clears it. */
    setPaymentInstructions: adminProcedure
      .input(s.setPaymentInstructionsInput)
      .mutation(({ ctx, input }) => merchants.setPaymentInstructions(ctx.db, input.merchant_id, input.payment_instructions)),
  }),
  keys: router({
    /** The answer's `key` is the only time the key is ever shown. */
    create: adminProcedure.input(s.createKeyInput).mutation(({ ctx, input }) => merchants.createApiKey(ctx.db, input)),
    list: adminProcedure.input(s.keyListInput).query(({ ctx, input }) => merchants.listApiKeys(ctx.db, input.merchant_id)),
    revoke: adminProcedure.input(s.keyIdInput).mutation(({ ctx, input }) => merchants.revokeApiKey(ctx.db, input.key_id)),
  }),
  /** Chilean tax documents (docs/decisions.md §15): a merchant's signing certificate (never shown back), its CAFs, its folios left. */
  dte: router({
    addCertificate: adminProcedure
      .input(s.addCertificateInput)
      .mutation(({ ctx, input }) => dte.addCertificate(ctx.db, ctx.app.secrets, input.merchant_id, input.file_base64, input.password)),
    addCaf: adminProcedure
      .input(s.addCafInput)
      .mutation(({ ctx, input }) => dte.addCaf(ctx.db, ctx.app.config, ctx.app.secrets, input.merchant_id, input.file_base64)),
    status: adminProcedure.input(s.dteStatusInput).query(({ ctx, input }) => dte.dteStatus(ctx.db, input.merchant_id)),
    foliosLeft: adminProcedure.query(({ ctx }) => dte.foliosLeftOfAll(ctx.db)),
    // A merchant's documents and where each stands at the SII, a rejection with SII's reason.
    documents: adminProcedure.input(s.dteDocumentsInput).query(({ ctx, input }) => dte.listDocuments(ctx.db, input.merchant_id, input.status)),
  }),
  rates: router({
    set: adminProcedure.input(s.setRateInput).mutation(({ ctx, input }) => admin.setExchangeRate(ctx.db, input)),
    list: adminProcedure.input(s.rateListInput).query(({ ctx, input }) => admin.listExchangeRates(ctx.db, input)),
  }),
});

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
