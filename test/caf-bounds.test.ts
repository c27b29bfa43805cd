// A CAF is read only from what SII signed (docs/decisions.md §19): every field from the one DA of the one
// CAF, a second CAF or DA or a DA field outside the DA refused, and a file past 64 KiB or 32
// elements deep refused at once, through the service, the CLI and the admin router alike.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TRPCError } from '@trpc/server';
import { createCaller } from '../src/admin/router.js';
import { CafError, MAX_CAF_BYTES, parseCaf } from '../src/dte/caf.js';
import { addCaf } from '../src/dte/service.js';
import { setTaxProfile } from '../src/merchants/service.js';
import { testApp, TEST_ENV, type TestApp } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { cafFile, DTE_PROFILE, siiAuthority } from './helpers/dte-fixtures.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const sii = siiAuthority();
const dir = mkdtempSync(path.join(os.tmpdir(), 'caf-bounds-'));
t.teardown(() => {
  sii.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** A genuine CAF SII issued to another RUT, folios 1..100. */
const OTHER_RUT = '96874030-K';
const genuineOther = cafFile(sii, { rut: OTHER_RUT, type: 33, from: 1, to: 100 });
const FORGED_BLOCK = `<X><RE>${DTE_PROFILE.rut}</RE><TD>33</TD><RNG><D>5000</D><H>9000</H></RNG></X>`;
/** The attack: that CAF with a block naming our merchant and folios 5000..9000 before its CAF. */
const attack = edit(genuineOther, (x) => x.replace('<CAF', `${FORGED_BLOCK}<CAF`));

function edit(file: Buffer, change: (xml: string) => string): Buffer {
  const xml = file.toString('latin1');
  const changed = change(xml);
  if (changed === xml) throw new Error('the edit changed nothing');
  return Buffer.from(changed, 'latin1');
}

function write(name: string, content: Buffer): string {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
}

/** parseCaf's refusal and how long it took. */
function refusedBy(file: Buffer): { message: string; ms: number } {
  const start = performance.now();
  try {
    parseCaf(file);
  } catch (err) {
    const ms = performance.now() - start;
    if (!(err instanceof CafError)) throw err;
    return { message: err.message, ms };
  }
  throw new Error('expected the CAF to be refused');
}

async function cafsLoaded(h: TestApp, merchantId: string): Promise<number> {
  const [row] = await h.sql`SELECT count(*)::int AS n FROM dte_cafs WHERE merchant_id = ${merchantId}`;
  return row!.n as number;
}

async function dteMerchantWithoutCafs(h: TestApp): Promise<string> {
  const m = await h.merchant();
  await setTaxProfile(h.sql, m.id, DTE_PROFILE);
  return m.id;
}

t.test('the genuine CAF of another RUT is read as what SII signed: that RUT, folios 1..100', async (t) => {
  t.match(parseCaf(genuineOther), { rut: OTHER_RUT, dteType: 33, from: 1, to: 100, idk: 100 });
});

t.test('the attack: a forged block before CAF naming our merchant and folios 5000..9000 is refused, nothing loaded', async (t) => {
  const { message } = refusedBy(attack);
  t.match(message, /the DA's field RE stands inside X, not inside DA/);

  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, ADMIN_TOKEN: TOKEN });
  const merchantId = await dteMerchantWithoutCafs(h);

  const viaService = await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, attack).catch((e: unknown) => e);
  t.match(viaService, { code: 'validation_error', status: 400, details: { errors: [{ path: 'file', message: /RE stands inside X/ }] } }, 'addCaf refuses it naming file');

  // The CLI, as support staff run it.
  process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
  process.env.SII_CERT_FILE = sii.certFile;
  const viaCli = await runCli(h.dbUrl, 'dte', 'caf', 'add', '--merchant', merchantId, '--file', write('attack.xml', attack));
  t.equal(viaCli.code, 1);
  t.match(viaCli.out.error, { code: 'validation_error', details: { errors: [{ path: 'file', message: /RE stands inside X/ }] } }, 'dte caf add refuses it');

  const admin = createCaller({ app: h.ctx, authorization: `Bearer ${TOKEN}` });
  const viaAdmin = await admin.dte.addCaf({ merchant_id: merchantId, file_base64: attack.toString('base64') }).catch((e: unknown) => e);
  t.ok(viaAdmin instanceof TRPCError);
  t.match((viaAdmin as TRPCError).cause, { code: 'validation_error', details: { errors: [{ path: 'file', message: /RE stands inside X/ }] } }, 'the admin router refuses it');

  t.equal(await cafsLoaded(h, merchantId), 0, 'no CAF loaded');
  const [counter] = await h.sql`SELECT count(*)::int AS n FROM dte_folio_counters WHERE merchant_id = ${merchantId}`;
  t.equal(counter!.n, 0, 'no folio counter created');

  // The same forged fields anywhere else outside the DA: after the CAF, inside CAF, beside RSASK.
  for (const [where, file] of [
    ['after the CAF', edit(genuineOther, (x) => x.replace('</CAF>', `</CAF>${FORGED_BLOCK}`))],
    ['inside CAF, before DA', edit(genuineOther, (x) => x.replace('<DA>', `<RE>${DTE_PROFILE.rut}</RE><DA>`))],
    ['inside CAF, after FRMA', edit(genuineOther, (x) => x.replace('</CAF>', '<RNG><D>5000</D><H>9000</H></RNG></CAF>'))],
    ['in the root', edit(genuineOther, (x) => x.replace('<RSASK>', '<TD>34</TD><RSASK>'))],
    ['inside FRMA', edit(genuineOther, (x) => x.replace('</FRMA>', '<IDK>300</IDK></FRMA>'))],
  ] as const) {
    t.match(refusedBy(file).message, /the DA's field (RE|RNG|TD|IDK) stands inside (X|AUTORIZACION|CAF|FRMA), not inside DA/, where);
  }
});

t.test('a second DA, a second CAF, a field twice or a field outside the DA are refused, each saying so', async (t) => {
  const da = /<DA>[\s\S]*<\/DA>/.exec(genuineOther.toString('latin1'))![0];
  const caf = /<CAF[\s\S]*<\/CAF>/.exec(genuineOther.toString('latin1'))![0];
  const cases: [string, Buffer, RegExp][] = [
    ['a second DA after the first', edit(genuineOther, (x) => x.replace('</DA>', `</DA>${da}`)), /the file has 2 DA elements; a CAF file has exactly one/],
    ['a second DA elsewhere', edit(genuineOther, (x) => x.replace('<RSASK>', `<X>${da}</X><RSASK>`)), /the file has 2 DA elements/],
    ['a second CAF after the first', edit(genuineOther, (x) => x.replace('</CAF>', `</CAF>${caf}`)), /the file has 2 CAF elements; a CAF file has exactly one/],
    ['a second CAF first', edit(genuineOther, (x) => x.replace('<CAF', `${caf.replace(OTHER_RUT, DTE_PROFILE.rut)}<CAF`)), /the file has 2 CAF elements/],
    ['a DA field twice in the DA', edit(genuineOther, (x) => x.replace('<TD>', `<RE>${DTE_PROFILE.rut}</RE><TD>`)), /more than one RE/],
    ['a range bound twice', edit(genuineOther, (x) => x.replace('</RNG>', '<H>9000</H></RNG>')), /more than one H/],
    ['a DA field nested in another', edit(genuineOther, (x) => x.replace('</FA>', `<RE>${DTE_PROFILE.rut}</RE></FA>`)), /RE stands inside FA, not inside DA/],
    ['a range bound outside RNG', edit(genuineOther, (x) => x.replace('<D>1</D>', '').replace('</RNG>', '</RNG><D>1</D>')), /D stands inside DA, not inside RNG/],
    ['DA outside CAF', edit(genuineOther, (x) => x.replace(da, '').replace('<RSASK>', `${da}<RSASK>`)), /DA stands inside AUTORIZACION, not inside CAF/],
    ['CAF not under AUTORIZACION', edit(genuineOther, (x) => x.replace(caf, `<X>${caf}</X>`)), /CAF stands inside X, not inside AUTORIZACION/],
    ['an unknown element', edit(genuineOther, (x) => x.replace('<RSASK>', '<Y>1</Y><RSASK>')), /an element Y \(inside AUTORIZACION\) that a CAF has not/],
    ['a second RSASK', edit(genuineOther, (x) => x.replace('<RSAPUBK>', '<RSASK>x</RSASK><RSAPUBK>')), /more than one RSASK/],
    ['no RSASK', edit(genuineOther, (x) => x.replace(/<RSASK>[\s\S]*<\/RSASK>/, '')), /the CAF has no RSASK/],
    ['another root', edit(genuineOther, (x) => x.replace('<AUTORIZACION>', '<X><AUTORIZACION>').replace('</AUTORIZACION>', '</AUTORIZACION></X>')), /its root is X, not AUTORIZACION/],
    ['a DOCTYPE', edit(genuineOther, (x) => x.replace('<AUTORIZACION>', '<!DOCTYPE AUTORIZACION [<!ENTITY r "1">]><AUTORIZACION>')), /DOCTYPE/],
  ];
  for (const [name, file, message] of cases) t.match(refusedBy(file).message, message, name);

  // Through the service the refusal is a 400 naming `file`, and nothing is loaded.
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const merchantId = await dteMerchantWithoutCafs(h);
  const ours = cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 1, to: 10 });
  const secondDa = /<DA>[\s\S]*<\/DA>/.exec(ours.toString('latin1'))![0];
  const err = await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, edit(ours, (x) => x.replace('</DA>', `</DA>${secondDa}`))).catch((e: unknown) => e);
  t.match(err, { code: 'validation_error', status: 400, details: { errors: [{ path: 'file', message: /2 DA elements/ }] } });
  t.equal(await cafsLoaded(h, merchantId), 0);
});

t.test('hostile sizes and shapes are refused at once, before any parse', async (t) => {
  // The finding: 20,000 levels, 280 KB; it blocked the event loop 5-6 s.
  const deep = Buffer.from(`${'<AUTORIZACION>'.repeat(20_000)}${'</AUTORIZACION>'.repeat(20_000)}`);
  t.ok(deep.length > 280_000);
  const big = refusedBy(deep);
  t.match(big.message, /the file is \d+ bytes; a CAF is at most 65536 \(64 KiB\)/);
  t.ok(big.ms < 50, `refused in ${big.ms.toFixed(2)} ms`);

  // 20,000 levels inside 64 KiB: the depth scan refuses it, no parse.
  const deepSmall = Buffer.from('<a>'.repeat(20_000));
  t.ok(deepSmall.length <= MAX_CAF_BYTES);
  const nested = refusedBy(deepSmall);
  t.match(nested.message, /nest more than 32 deep/);
  t.ok(nested.ms < 50, `refused in ${nested.ms.toFixed(2)} ms`);
  const closed = refusedBy(Buffer.from(`${'<a x="/>">'.repeat(10)}${'<a>'.repeat(30)}`));
  t.match(closed.message, /nest more than 32 deep/, "a '>' in an attribute value does not hide a level");

  // 33 levels refused, 32 parsed (and then refused as no CAF).
  t.match(refusedBy(Buffer.from(`${'<a>'.repeat(33)}${'</a>'.repeat(33)}`)).message, /nest more than 32 deep/);
  t.match(refusedBy(Buffer.from(`${'<a>'.repeat(32)}${'</a>'.repeat(32)}`)).message, /its root is a, not AUTORIZACION/);

  // The parser is slow on thousands of siblings or attributes too; those are refused by the same scan.
  const siblings = refusedBy(Buffer.from(`<AUTORIZACION>${'<a/>'.repeat(16_000)}</AUTORIZACION>`));
  t.match(siblings.message, /more than 64 elements/);
  t.ok(siblings.ms < 50, `siblings refused in ${siblings.ms.toFixed(2)} ms`);
  const comments = refusedBy(Buffer.from(`<AUTORIZACION>${'<!---->'.repeat(9_000)}</AUTORIZACION>`));
  t.match(comments.message, /more than 64 elements, comments/);
  const attributes = refusedBy(Buffer.from(`<AUTORIZACION ${Array.from({ length: 6_000 }, (_, i) => `a${i}=""`).join(' ')}/>`));
  t.match(attributes.message, /more than 16 attributes/);
  t.ok(attributes.ms < 50, `attributes refused in ${attributes.ms.toFixed(2)} ms`);

  // 65 KiB: a genuine CAF padded past the bound.
  const padded = edit(genuineOther, (x) => x.replace('<RSAPUBK>', `<RSAPUBK>${'A'.repeat(65 * 1024)}`));
  t.ok(padded.length > MAX_CAF_BYTES);
  t.match(refusedBy(padded).message, /a CAF is at most 65536 \(64 KiB\)/);
  t.match(refusedBy(Buffer.alloc(65 * 1024, 'a')).message, /the file is 66560 bytes/);
  // Unclosed markup is not XML.
  t.match(refusedBy(Buffer.from('<AUTORIZACION><!-- ')).message, /not XML/);
  t.match(refusedBy(Buffer.from('</a><a>')).message, /not XML/);

  // Through the service and the CLI alike, at once.
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const merchantId = await dteMerchantWithoutCafs(h);
  const start = performance.now();
  const err = await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, deepSmall).catch((e: unknown) => e);
  const ms = performance.now() - start;
  t.match(err, { code: 'validation_error', details: { errors: [{ path: 'file', message: /nest more than 32 deep/ }] } });
  t.ok(ms < 500, `addCaf refused it in ${ms.toFixed(1)} ms`);
  process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
  process.env.SII_CERT_FILE = sii.certFile;
  const viaCli = await runCli(h.dbUrl, 'dte', 'caf', 'add', '--merchant', merchantId, '--file', write('deep.xml', deep));
  t.equal(viaCli.code, 1);
  t.match(viaCli.out.error, { code: 'validation_error', details: { errors: [{ path: 'file', message: /at most 65536/ }] } });
  t.equal(await cafsLoaded(h, merchantId), 0);
});

t.test('a genuine CAF is still accepted, through the service and the CLI', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const merchantId = await dteMerchantWithoutCafs(h);
  const genuine = cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 1, to: 100 });
  t.match(parseCaf(genuine), { rut: DTE_PROFILE.rut, dteType: 33, from: 1, to: 100, authorizedOn: '2026-01-15', idk: 100 });
  t.match(await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, genuine), { dte_type: 33, folio_from: 1, folio_to: 100, folios_left: 100 });

  // As SII writes it: ISO-8859-1, declared so, on one line, with a comment outside the DA.
  const oneLine = edit(cafFile(sii, { rut: DTE_PROFILE.rut, type: 34, from: 1, to: 20 }), (x) =>
    x.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="ISO-8859-1"?><!-- CAF -->').replace(/>\s+</g, '><'),
  );
  process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
  process.env.SII_CERT_FILE = sii.certFile;
  const viaCli = await runCli(h.dbUrl, 'dte', 'caf', 'add', '--merchant', merchantId, '--file', write('caf34.xml', oneLine));
  t.equal(viaCli.code, 0);
  t.match(viaCli.out, { dte_type: 34, folio_from: 1, folio_to: 20, folios_left: 20 });
  t.equal(await cafsLoaded(h, merchantId), 2);
});
