# bash completion for facho (Facho's operator CLI)
_facho() {
	local cur prev words cword
	_init_completion || return
	local commands="dev keygen streams nats replay rebuild export users keys tail profiles bench version help"
	if [ "$cword" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		return
	fi
	case "${words[1]}" in
	streams) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "provision catalogue" -- "$cur")) ;;
	nats) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "keys" -- "$cur")) || _filedir -d ;;
	users) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "add list" -- "$cur")) ;;
	keys) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "rotate" -- "$cur")) ;;
	export) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "onu-data onu-history varbinds" -- "$cur")) || _filedir ;;
	profiles) [ "$cword" -eq 2 ] && COMPREPLY=($(compgen -W "list show check" -- "$cur")) || _filedir ;;
	version) COMPREPLY=($(compgen -W "-json" -- "$cur")) ;;
	*) _filedir ;;
	esac
} &&
	complete -F _facho facho
