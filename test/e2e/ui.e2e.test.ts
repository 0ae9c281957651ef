import { mkdtempSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalWorld, type ApprovalWorld } from '../approvals/world.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

describe('the operator page in a real headless chromium', () => {
  let world: ApprovalWorld;
  let browser: Browser;
  const tmp = mkdtempSync(join(tmpdir(), 'toolsearch-ui-'));

  beforeAll(async () => {
    world = await approvalWorld();
    const profile = join(tmp, 'profile');
    mkdirSync(profile);
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        `--user-data-dir=${profile}`,
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  it('lists a pending approval; a click on approve runs the call; the session log shows it', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1366, height: 800 });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });

    await page.goto(`${world.gw.url}/ui`, { waitUntil: 'domcontentloaded' });
    // Signed out: the login form asks for the credential; a wrong one is refused.
    await page.waitForSelector('#login:not([hidden])');
    await page.type('#token', 'tsa_wrong');
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('#login-error')?.textContent !== '');

    await page.type('#token', world.gw.approverToken!.token);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('#main:not([hidden])');
    expect(await page.$eval('#login', (e) => getComputedStyle(e).display)).toBe('none');
    expect(await page.$eval('#status', (e) => e.textContent)).toContain('local');

    // A call that needs approval: the page lists it live, with the tool, the arguments (secret redacted), the countdown.
    const turn = world.chat('s-ui');
    const card = await page.waitForSelector('#approvals .approval', { timeout: 15_000 });
    const shown = await card!.evaluate((e) => e.textContent ?? '');
    expect(shown).toContain('deploy_service');
    expect(shown).toContain('openclaw:ops:deploy_service');
    expect(shown).toContain('s-ui');
    expect(shown).toContain('"service": "toolsearch-marker"');
    expect(shown).not.toContain('"password": "toolsearch-marker"');
    await page.waitForFunction(() => /\d+ s/.test(document.querySelector('.countdown')?.textContent ?? ''));
    expect(world.runs()).toEqual([]);
    await page.screenshot({ path: join(tmp, 'pending.png') });

    await page.type('#approvals .approval input', 'checked on the page');
    await page.click('#approvals .approval button.approve');
    const res = await turn;
    expect(res.status).toBe(200);
    expect(world.runs()).toEqual(['toolsearch-marker']);
    await page.waitForFunction(() => document.querySelectorAll('#approvals .approval').length === 0);
    await page.waitForFunction(() => (document.querySelector('#settled')?.textContent ?? '').includes('approved'));

    // The session log: the final call with its source and outcome, approved by the local user through the page.
    await page.waitForFunction(
      () => {
        // The page hears the call's outcome after its approval (both live from the stream): wait for both.
        const tds = [...document.querySelectorAll('#calls tbody tr td')].map((td) => td.textContent ?? '');
        return tds[0] === 'openclaw:ops:deploy_service' && tds[2] === 'ok' && tds[3] === 'approved by local via page';
      },
      { timeout: 15_000 },
    );
    const row = await page.$$eval('#calls tbody tr td', (tds) => tds.map((td) => td.textContent ?? ''));
    expect(row.slice(0, 4)).toEqual(['openclaw:ops:deploy_service', 'openclaw', 'ok', 'approved by local via page']);
    expect(await page.$eval('#log', (e) => e.textContent ?? '')).toMatch(/schemas up front/);
    const shot = join(tmp, 'ui.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(1000);
    expect(problems).toEqual([]);
    console.log(`screenshots: ${tmp}`);
    await page.close();
  }, 60_000);

  it('updates live from the event stream (no polling), and polls only while the stream is down', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1366, height: 800 });
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    const requests: string[] = [];
    let streamDown = false;
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      requests.push(`${r.method()} ${path}`);
      if (streamDown && path === '/v1/approvals/events') void r.abort();
      else void r.continue();
    });
    await page.goto(`${world.gw.url}/ui`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#login:not([hidden])');
    await page.type('#token', world.gw.approverToken!.token);
    await page.click('#login-form button[type=submit]');
    await page.waitForSelector('body[data-live="stream"]', { timeout: 15_000 });
    await page.waitForFunction(() => document.querySelector('#live')?.textContent === 'live');

    // A new session and a new approval reach the page over the stream: no request lists approvals or sessions.
    const from = requests.length;
    const polls = () => requests.slice(from).filter((r) => r === 'GET /v1/approvals' || r === 'GET /v1/sessions');
    const turn = world.chat('s-live');
    await page.waitForSelector('#sessions li[data-session="s-live"]', { timeout: 15_000 });
    const card = await page.waitForSelector('#approvals .approval', { timeout: 15_000 });
    expect(await card!.evaluate((e) => e.textContent ?? '')).toContain('s-live');
    expect(polls()).toEqual([]);
    await page.click('#approvals .approval button.approve');
    expect((await turn).status).toBe(200);
    await page.waitForFunction(() => document.querySelectorAll('#approvals .approval').length === 0);
    // The selected session's log follows the stream's activity: pick s-live and watch its call settle.
    await page.click('#sessions li[data-session="s-live"]');
    await page.waitForFunction(
      () => (document.querySelector('#calls')?.textContent ?? '').includes('approved by local via page'),
      { timeout: 15_000 },
    );
    expect(polls()).toEqual([]);

    // The stream drops (and cannot come back for now): the page polls instead, and lists a new approval that way.
    streamDown = true;
    // (The page's script is a classic script: its top-level `streamAbort` is a global binding, not a property.)
    await page.evaluate('streamAbort.abort()');
    await page.waitForSelector('body[data-live="polling"]', { timeout: 15_000 });
    const turn2 = world.chat('s-polled');
    await page.waitForFunction(() => (document.querySelector('#approvals')?.textContent ?? '').includes('s-polled'), {
      timeout: 15_000,
    });
    expect(polls().length).toBeGreaterThan(0);
    // Back up: live again, and the polling stops.
    streamDown = false;
    await page.waitForSelector('body[data-live="stream"]', { timeout: 20_000 });
    const after = requests.length;
    await page.click('#approvals .approval button.deny');
    expect((await turn2).status).toBe(200);
    await page.waitForFunction(() => document.querySelectorAll('#approvals .approval').length === 0);
    // No poll has run since the stream came back, and none is scheduled.
    expect(await page.evaluate('pollTimer === null')).toBe(true);
    expect(requests.slice(after).filter((r) => r === 'GET /v1/approvals' || r === 'GET /v1/sessions')).toEqual([]);
    expect(world.runs()).toEqual(['toolsearch-marker', 'toolsearch-marker']);
    await page.screenshot({ path: join(tmp, 'live.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});
