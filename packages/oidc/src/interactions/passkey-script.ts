/**
 * `passkey.js`, the sign-in and account pages' passkey script (served from
 * the assets path: the pages allow no inline script). Progressive
 * enhancement: forms marked `data-passkey` stay hidden unless the browser
 * has WebAuthn with its JSON helpers (`PublicKeyCredential.
 * parseRequestOptionsFromJSON` / `parseCreationOptionsFromJSON`,
 * `credential.toJSON()`). A form's submit fetches its options
 * (`data-options`; `data-options-method="POST"` sends the form's CSRF
 * token), asks the browser, puts `JSON.stringify(credential.toJSON())` in
 * its `credential` field and submits it as a normal form. On the sign-in
 * page the form also starts a conditional request (passkey autofill on the
 * e-mail field, `autocomplete="username webauthn"`), which the button aborts.
 */
export const PASSKEY_SCRIPT = `(function () {
  'use strict';
  var PKC = window.PublicKeyCredential;
  var ready = !!(PKC && navigator.credentials && typeof PKC.parseRequestOptionsFromJSON === 'function' &&
    typeof PKC.parseCreationOptionsFromJSON === 'function');
  var conditional = null;

  function say(form, text) {
    var status = form.querySelector('[data-passkey-status]');
    if (status) status.textContent = text;
  }

  function field(form, name) {
    return form.elements.namedItem(name);
  }

  function options(form) {
    var post = form.getAttribute('data-options-method') === 'POST';
    var init = { method: post ? 'POST' : 'GET', credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (post) {
      init.headers['content-type'] = 'application/x-www-form-urlencoded';
      init.body = 'csrf=' + encodeURIComponent(field(form, 'csrf').value);
    }
    return fetch(form.getAttribute('data-options'), init).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (body) {
        if (!response.ok) throw new Error(body.message || 'The passkey request could not start. Reload the page and try again.');
        return body;
      });
    });
  }

  function explain(form, error) {
    if (!error || error.name === 'AbortError') return;
    if (error.name === 'NotAllowedError') say(form, 'The passkey request was cancelled or timed out. Try again.');
    else if (error.name === 'InvalidStateError') say(form, 'This device already holds a passkey for your account.');
    else if (error.name === 'SecurityError') say(form, 'Passkeys cannot be used from this address.');
    else say(form, error.message || 'Your browser could not use a passkey here.');
  }

  function send(form, credential) {
    field(form, 'credential').value = JSON.stringify(credential.toJSON());
    say(form, 'Checking your passkey…');
    HTMLFormElement.prototype.submit.call(form);
  }

  function authenticate(form, mediation) {
    if (conditional) conditional.abort();
    var controller = new AbortController();
    if (mediation === 'conditional') conditional = controller;
    return options(form).then(function (json) {
      var request = { publicKey: PKC.parseRequestOptionsFromJSON(json), signal: controller.signal };
      if (mediation === 'conditional') request.mediation = 'conditional';
      return navigator.credentials.get(request);
    }).then(function (credential) {
      if (credential) send(form, credential);
    }).catch(function (error) {
      if (mediation !== 'conditional') explain(form, error);
    });
  }

  function register(form) {
    return options(form).then(function (json) {
      return navigator.credentials.create({ publicKey: PKC.parseCreationOptionsFromJSON(json) });
    }).then(function (credential) {
      if (credential) send(form, credential);
    }).catch(function (error) {
      explain(form, error);
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    if (!ready) return;
    var unsupported = document.querySelectorAll('[data-passkey-unsupported]');
    for (var i = 0; i < unsupported.length; i++) unsupported[i].hidden = true;
    var forms = document.querySelectorAll('form[data-passkey]');
    for (var j = 0; j < forms.length; j++) {
      (function (form) {
        var kind = form.getAttribute('data-passkey');
        form.hidden = false;
        form.addEventListener('submit', function (event) {
          event.preventDefault();
          say(form, '');
          if (kind === 'register') register(form);
          else authenticate(form, 'modal');
        });
        // Not after a refusal: the page says why, and waits for the user rather than asking again.
        if (kind === 'sign-in' && !document.getElementById('error-summary') && typeof PKC.isConditionalMediationAvailable === 'function') {
          PKC.isConditionalMediationAvailable().then(function (available) {
            if (available) authenticate(form, 'conditional');
          }).catch(function () {});
        }
      })(forms[j]);
    }
  });
})();
`;
