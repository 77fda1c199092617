// Package sizecheck holds no code: its test keeps the module's production
// Go small as it grows (issue 43, item 8). No file other than a test may
// pass MaxFileLines, and no function MaxFuncLines unless its doc comment
// says why it must be one piece (a paragraph starting "One piece").
package sizecheck

// MaxFileLines is the most lines a production Go file may have.
const MaxFileLines = 800

// MaxFuncLines is the most lines a function may have without a comment
// saying why it must be one piece.
const MaxFuncLines = 120
