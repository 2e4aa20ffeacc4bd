// SokuhoCLI — the table-driven command line: `CommandLineParser`, one file per command; ManPage.swift
// renders sokuho(1) from the same help texts.
