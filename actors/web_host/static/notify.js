// The apps' notifications on this page. The page's socket (app.js) hands each one here as a
// `lineup:notification` event; it is shown with the browser's Notification API where the
// user allowed it, else as a note of the page's own (top right, the newest first, the last
// three kept until closed), and the web host is told which, so that the runtime knows it
// was seen. The browser is asked for permission only when the user presses "Allow
// notifications", never on load: a prompt nobody asked for is one people learn to deny.
"use strict";

(() => {
  const KEPT = 3; // the page's own notes shown at once; older ones go
  const $ = (id) => document.getElementById(id);
  const api = () => ("Notification" in window ? window.Notification : null);

  function allowed() {
    const notification = api();
    return notification !== null && notification.permission === "granted";
  }

  // The control is offered while the browser has not been told either way.
  function showAllow() {
    const notification = api();
    $("allow-notifications").hidden = !(notification && notification.permission === "default");
  }

  function note(head, text) {
    const list = $("notes");
    const item = document.createElement("li");
    item.className = "note";
    const words = document.createElement("div");
    const title = document.createElement("strong");
    title.textContent = head;
    const body = document.createElement("p");
    body.textContent = text;
    words.append(title, body);
    const close = document.createElement("button");
    close.type = "button";
    close.className = "quiet";
    close.textContent = "×";
    close.setAttribute("aria-label", `Close the notification from ${head}`);
    close.addEventListener("click", () => {
      item.remove();
      list.hidden = list.children.length === 0;
    });
    item.append(words, close);
    list.prepend(item);
    while (list.children.length > KEPT) list.lastElementChild.remove();
    list.hidden = false;
  }

  document.addEventListener("lineup:notification", (event) => {
    const { notification, shown } = event.detail;
    const head = notification.title ? `${notification.app}: ${notification.title}` : notification.app;
    if (allowed()) {
      try {
        // The tag is the request's: several open pages show one notification, not one each.
        new (api())(head, { body: notification.text, tag: notification.id });
        shown("system");
        return;
      } catch (_) {
        // A browser that allows notifications only from a service worker: the page's note.
      }
    }
    note(head, notification.text);
    shown("toast");
  });

  document.addEventListener("DOMContentLoaded", () => {
    $("allow-notifications").addEventListener("click", async () => {
      await api().requestPermission();
      showAllow();
    });
    showAllow();
    // The user may change their mind in the browser's own settings too.
    if (api() && navigator.permissions) {
      navigator.permissions.query({ name: "notifications" }).then((status) => {
        status.addEventListener("change", showAllow);
      }, () => {});
    }
  });
})();
