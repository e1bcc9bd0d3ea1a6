module github.com/facho-olt/facho/services/planner

go 1.26
