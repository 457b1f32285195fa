// Drives the reach UI in Debian's chromium through playwright-core.
// Env: BASE (server URL), CHROMIUM (browser path), SHOTS (screenshot folder),
// PW (path to playwright-core). Prints one JSON object with what it saw.
const { chromium } = require(process.env.PW);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--no-first-run", "--disable-quic"],
  });
  const out = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const shot = (name) => page.screenshot({ path: `${process.env.SHOTS}/${name}.png`, fullPage: true });

    // 1. The requests list shows the running request.
    await page.goto(`${process.env.BASE}/ui/`);
    const row = page.locator('tr[data-request="busy"]');
    await row.waitFor();
    out.listState = (await row.locator("td.state").innerText()).trim();
    await shot("1-requests");

    // 2. Its page shows the SVG graph with the refused cycle edge.
    await row.locator("a").first().click();
    await page.locator("#graph svg").waitFor();
    out.cycleEdges = await page.locator("#graph svg path.cycle").count();
    out.refusedFrames = await page.locator("#graph svg g.frame.refused").count();
    await shot("2-request");

    // 3. Clicking cancel (with a reason) stops it.
    const form = page.locator('form:has(button[value="cancel"])');
    await form.locator('input[name="reason"]').fill("runaway in the browser test");
    await Promise.all([page.waitForNavigation(), form.locator("button").click()]);
    out.stateAfterCancel = (await page.locator("#state").innerText()).trim();
    out.flash = (await page.locator(".flash").innerText()).trim();
    await shot("3-cancelled");

    // 4. An approval is approved from the inbox.
    await page.goto(`${process.env.BASE}/ui/approvals`);
    const ap = page.locator("tr[data-approval]").first();
    await ap.waitFor();
    out.approvalTool = (await ap.locator("td b").first().innerText()).trim();
    await ap.locator('form[action$="/approve"] input[name="reason"]').fill("looks right");
    await Promise.all([page.waitForNavigation(), ap.locator('form[action$="/approve"] button').click()]);
    out.approvalFlash = (await page.locator(".flash").innerText()).trim();
    await shot("4-approved");
  } catch (e) {
    out.error = String(e && e.stack || e);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
