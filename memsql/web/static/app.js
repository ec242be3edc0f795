// memsql serve: the page's one small script. Everything works without it; it adds a confirmation dialog to
// destructive forms and "select all" to the archive.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("click", (event) => {
  if (!event.target.matches("button.select-all")) return;
  const boxes = event.target.form.querySelectorAll('input[name="memory_ids"]');
  const all = Array.from(boxes).every((b) => b.checked);
  boxes.forEach((b) => { b.checked = !all; });
});
