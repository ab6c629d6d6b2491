// SPDX-License-Identifier: GPL-3.0-or-later
// Run a Flamenco job type's compileJob() under Node, with stand-ins for the globals Flamenco's
// Manager gives job types (author, path, print), and print the authored tasks as JSON.
//   node compile_flamenco.js JOB_TYPE.js '{"settings": {...}}'
// Flamenco's `path` is a POSIX path module with `stem` added; `author.Command(type, params)`
// keeps the command's type and parameters as given.
"use strict";
const fs = require("fs");
const nodePath = require("path").posix;
const vm = require("vm");

const [script, jobJson] = process.argv.slice(2);
const job = { ...JSON.parse(jobJson), tasks: [] };
job.addTask = (task) => job.tasks.push(task);
const context = {
  print: (...args) => process.stderr.write(args.join(" ") + "\n"),
  path: { ...nodePath, stem: (p) => nodePath.basename(p, nodePath.extname(p)) },
  author: {
    Task: (name, type) => {
      const task = { name, type, commands: [] };
      task.addCommand = (command) => task.commands.push(command);
      return task;
    },
    Command: (type, parameters) => ({ type, parameters }),
  },
};
vm.createContext(context);
vm.runInContext(fs.readFileSync(script, "utf8") + "\n;this.JOB_TYPE = JOB_TYPE;", context, { filename: script });
try {
  context.compileJob(job);
} catch (err) {
  process.stderr.write(`compileJob failed: ${err}\n`);
  process.exit(1);
}
process.stdout.write(JSON.stringify({ job_type: context.JOB_TYPE, tasks: job.tasks }));
