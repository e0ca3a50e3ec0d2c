// The dashboard page: everything it knows comes from /bff/user and /api/*; it never sees a token.
import { createBrowserLogger } from '/vendor/idt-logger.js';

const $ = (id) => document.getElementById(id);
let csrfToken = null;

const logger = createBrowserLogger({ endpoint: '/bff/logs', csrfToken: () => csrfToken });

function show(id, visible = true) {
  $(id).hidden = !visible;
}

function fail(message) {
  $('error').textContent = message;
  show('error');
  logger.error('dashboard.error', { message });
}

function addNotification({ title, message, createdAt }) {
  show('no-notifications', false);
  const item = document.createElement('li');
  const heading = document.createElement('strong');
  heading.textContent = title;
  const body = document.createElement('span');
  body.textContent = message;
  const when = document.createElement('small');
  when.textContent = ` ${new Date(createdAt).toLocaleTimeString()}`;
  item.append(heading, body, when);
  $('notification-list').prepend(item);
}

async function loadNotifications() {
  const response = await fetch('/api/v1/notifications?pageSize=10', { headers: { accept: 'application/json' } });
  if (!response.ok) return;
  const page = await response.json();
  for (const item of page.items.slice().reverse()) addNotification(item);
}

async function connectHub() {
  // The hub is proxied by the BFF: negotiate and the WebSocket go through /api, the BFF attaches the token.
  const connection = new signalR.HubConnectionBuilder()
    // Negotiate is a POST through the BFF, so it carries the CSRF token like any state-changing call.
    .withUrl('/api/hubs/realtime', {
      transport: signalR.HttpTransportType.WebSockets,
      headers: { 'x-csrf-token': csrfToken },
    })
    .withAutomaticReconnect()
    .build();
  connection.on('ReceiveNotification', (envelope) => {
    logger.info('dashboard.notification_received', { type: envelope.type });
    if (envelope.type === 'NotificationCreated') addNotification(envelope.payload);
    if (envelope.type === 'SessionEnded' || envelope.type === 'SessionEvicted') window.location.reload();
  });
  connection.onclose(() => {
    $('live').textContent = 'offline';
    $('live').classList.remove('live');
  });
  await connection.start();
  $('live').textContent = 'live';
  $('live').classList.add('live');
}

async function signOut() {
  const response = await fetch('/bff/logout', { method: 'POST', headers: { 'x-csrf-token': csrfToken ?? '' } });
  await logger.flush();
  if (response.status === 200) {
    const { logoutUrl } = await response.json();
    window.location.assign(logoutUrl);
  } else {
    window.location.reload();
  }
}

async function main() {
  const response = await fetch('/bff/user', { headers: { accept: 'application/json' } });
  if (response.status === 401) {
    show('signed-out');
    return;
  }
  if (!response.ok) return fail(`The dashboard could not load your session (${response.status}).`);
  const user = await response.json();
  csrfToken = user.csrfToken;
  $('who').textContent = user.email ?? user.sub;
  $('profile-name').textContent = user.name ?? '—';
  $('profile-email').textContent = user.email ?? '—';
  $('profile-org').textContent = user.orgName ?? user.orgId ?? '—';
  $('profile-roles').textContent = user.roles.join(', ') || '—';
  $('profile-expires').textContent = new Date(user.sessionExpiresAt).toLocaleString();
  $('sign-out').addEventListener('click', () => void signOut());
  show('account');
  show('profile');
  show('notifications');
  logger.info('dashboard.signed_in', {});
  await loadNotifications();
  await connectHub().catch((error) => fail(`Live notifications are unavailable: ${error.message}`));
}

main().catch((error) => fail(error.message));
