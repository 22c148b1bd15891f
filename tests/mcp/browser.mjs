// A "browser" for sign-in tests: it opens the authorization address and follows the
// authorization server's redirects back to the app's loopback listener, as a browser
// does when the user approves (the test authorization servers approve at once). Run
// by browser.sh with the Node the test kit installs (no curl needed).
const address = process.argv[2];
try {
  const answer = await fetch(address, { redirect: "follow", signal: AbortSignal.timeout(20000) });
  await answer.arrayBuffer();
} catch (error) {
  console.error(`browser.mjs: ${address}: ${error.message}`);
  process.exit(1);
}
