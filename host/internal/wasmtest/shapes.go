package wasmtest

// Tree adds a call tree of depth functions of type (i32) -> i32, each
// calling the next twice, the last calling leaf twice (leaf: a function of
// the same type), and returns the root's index. No loop: a call tree of
// depth d makes 2^d leaf calls.
func Tree(m *Module, depth int, leaf uint32) uint32 {
	root := m.NextFunc()
	for i := range depth {
		next := root + uint32(i) + 1
		if i == depth-1 {
			next = leaf
		}
		// f(x) = next(x) ^ next(x+1): both calls' results are used, so
		// neither can be dropped.
		body := Code{}.Get(0).Call(next).Get(0).I32(1).Op(OpI32Add).Call(next).Op(OpI32Xor)
		m.AddFunc(I32, I32, nil, body)
	}
	return root
}

// Arithmetic adds x*31 rotl 7, of type (i32) -> i32.
func Arithmetic(m *Module) uint32 {
	return m.AddFunc(I32, I32, nil, Code{}.Get(0).I32(31).Op(OpI32Mul).I32(7).Op(OpI32Rotl))
}

// CallTreePlugin is an Anvil plugin with one metric kind, "shape", whose
// measure runs a tree of 45 functions, each calling the next twice, the
// last doing a little arithmetic: 2^44 calls and no loop anywhere, far
// inside every admission limit. inDescribe runs the tree in anvil_describe
// instead, when the plugin is loaded.
func CallTreePlugin(inDescribe bool) []byte {
	g := NewGuest()
	// f_0 … f_43 call their successor, f_44 is the arithmetic: the tree's
	// functions come first, the leaf right after them.
	leaf := g.M.NextFunc() + 44
	root := Tree(g.M, 44, leaf)
	Arithmetic(g.M)
	attack := Code{}.I32(1).Call(root).Op(OpDrop)
	if inDescribe {
		return g.Finish("calltree-describe", attack, Code{}, []byte(`{"score":1,"reason":"measured"}`))
	}
	return g.Finish("calltree", nil, attack, []byte(`{"score":1,"reason":"the tree ended"}`))
}
