// placeholder until transport tests merge
